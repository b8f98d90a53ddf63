var X=globalThis,Z=X.ShadowRoot&&(X.ShadyCSS===void 0||X.ShadyCSS.nativeShadow)&&"adoptedStyleSheets"in Document.prototype&&"replace"in CSSStyleSheet.prototype,de=Symbol(),Le=new WeakMap,V=class{constructor(e,t,n){if(this._$cssResult$=!0,n!==de)throw Error("CSSResult is not constructable. Use `unsafeCSS` or `css` instead.");this.cssText=e,this.t=t}get styleSheet(){let e=this.o,t=this.t;if(Z&&e===void 0){let n=t!==void 0&&t.length===1;n&&(e=Le.get(t)),e===void 0&&((this.o=e=new CSSStyleSheet).replaceSync(this.cssText),n&&Le.set(t,e))}return e}toString(){return this.cssText}},ze=r=>new V(typeof r=="string"?r:r+"",void 0,de),le=(r,...e)=>{let t=r.length===1?r[0]:e.reduce((n,i,o)=>n+(s=>{if(s._$cssResult$===!0)return s.cssText;if(typeof s=="number")return s;throw Error("Value passed to 'css' function must be a 'css' function result: "+s+". Use 'unsafeCSS' to pass non-literal values, but take care to ensure page security.")})(i)+r[o+1],r[0]);return new V(t,r,de)},Me=(r,e)=>{if(Z)r.adoptedStyleSheets=e.map(t=>t instanceof CSSStyleSheet?t:t.styleSheet);else for(let t of e){let n=document.createElement("style"),i=X.litNonce;i!==void 0&&n.setAttribute("nonce",i),n.textContent=t.cssText,r.appendChild(n)}},fe=Z?r=>r:r=>r instanceof CSSStyleSheet?(e=>{let t="";for(let n of e.cssRules)t+=n.cssText;return ze(t)})(r):r;var{is:Mt,defineProperty:Ot,getOwnPropertyDescriptor:Dt,getOwnPropertyNames:Vt,getOwnPropertySymbols:jt,getPrototypeOf:Bt}=Object,G=globalThis,Oe=G.trustedTypes,Ft=Oe?Oe.emptyScript:"",Kt=G.reactiveElementPolyfillSupport,j=(r,e)=>r,ue={toAttribute(r,e){switch(e){case Boolean:r=r?Ft:null;break;case Object:case Array:r=r==null?r:JSON.stringify(r)}return r},fromAttribute(r,e){let t=r;switch(e){case Boolean:t=r!==null;break;case Number:t=r===null?null:Number(r);break;case Object:case Array:try{t=JSON.parse(r)}catch{t=null}}return t}},Ve=(r,e)=>!Mt(r,e),De={attribute:!0,type:String,converter:ue,reflect:!1,useDefault:!1,hasChanged:Ve};Symbol.metadata??=Symbol("metadata"),G.litPropertyMetadata??=new WeakMap;var $=class extends HTMLElement{static addInitializer(e){this._$Ei(),(this.l??=[]).push(e)}static get observedAttributes(){return this.finalize(),this._$Eh&&[...this._$Eh.keys()]}static createProperty(e,t=De){if(t.state&&(t.attribute=!1),this._$Ei(),this.prototype.hasOwnProperty(e)&&((t=Object.create(t)).wrapped=!0),this.elementProperties.set(e,t),!t.noAccessor){let n=Symbol(),i=this.getPropertyDescriptor(e,n,t);i!==void 0&&Ot(this.prototype,e,i)}}static getPropertyDescriptor(e,t,n){let{get:i,set:o}=Dt(this.prototype,e)??{get(){return this[t]},set(s){this[t]=s}};return{get:i,set(s){let c=i?.call(this);o?.call(this,s),this.requestUpdate(e,c,n)},configurable:!0,enumerable:!0}}static getPropertyOptions(e){return this.elementProperties.get(e)??De}static _$Ei(){if(this.hasOwnProperty(j("elementProperties")))return;let e=Bt(this);e.finalize(),e.l!==void 0&&(this.l=[...e.l]),this.elementProperties=new Map(e.elementProperties)}static finalize(){if(this.hasOwnProperty(j("finalized")))return;if(this.finalized=!0,this._$Ei(),this.hasOwnProperty(j("properties"))){let t=this.properties,n=[...Vt(t),...jt(t)];for(let i of n)this.createProperty(i,t[i])}let e=this[Symbol.metadata];if(e!==null){let t=litPropertyMetadata.get(e);if(t!==void 0)for(let[n,i]of t)this.elementProperties.set(n,i)}this._$Eh=new Map;for(let[t,n]of this.elementProperties){let i=this._$Eu(t,n);i!==void 0&&this._$Eh.set(i,t)}this.elementStyles=this.finalizeStyles(this.styles)}static finalizeStyles(e){let t=[];if(Array.isArray(e)){let n=new Set(e.flat(1/0).reverse());for(let i of n)t.unshift(fe(i))}else e!==void 0&&t.push(fe(e));return t}static _$Eu(e,t){let n=t.attribute;return n===!1?void 0:typeof n=="string"?n:typeof e=="string"?e.toLowerCase():void 0}constructor(){super(),this._$Ep=void 0,this.isUpdatePending=!1,this.hasUpdated=!1,this._$Em=null,this._$Ev()}_$Ev(){this._$ES=new Promise(e=>this.enableUpdating=e),this._$AL=new Map,this._$E_(),this.requestUpdate(),this.constructor.l?.forEach(e=>e(this))}addController(e){(this._$EO??=new Set).add(e),this.renderRoot!==void 0&&this.isConnected&&e.hostConnected?.()}removeController(e){this._$EO?.delete(e)}_$E_(){let e=new Map,t=this.constructor.elementProperties;for(let n of t.keys())this.hasOwnProperty(n)&&(e.set(n,this[n]),delete this[n]);e.size>0&&(this._$Ep=e)}createRenderRoot(){let e=this.shadowRoot??this.attachShadow(this.constructor.shadowRootOptions);return Me(e,this.constructor.elementStyles),e}connectedCallback(){this.renderRoot??=this.createRenderRoot(),this.enableUpdating(!0),this._$EO?.forEach(e=>e.hostConnected?.())}enableUpdating(e){}disconnectedCallback(){this._$EO?.forEach(e=>e.hostDisconnected?.())}attributeChangedCallback(e,t,n){this._$AK(e,n)}_$ET(e,t){let n=this.constructor.elementProperties.get(e),i=this.constructor._$Eu(e,n);if(i!==void 0&&n.reflect===!0){let o=(n.converter?.toAttribute!==void 0?n.converter:ue).toAttribute(t,n.type);this._$Em=e,o==null?this.removeAttribute(i):this.setAttribute(i,o),this._$Em=null}}_$AK(e,t){let n=this.constructor,i=n._$Eh.get(e);if(i!==void 0&&this._$Em!==i){let o=n.getPropertyOptions(i),s=typeof o.converter=="function"?{fromAttribute:o.converter}:o.converter?.fromAttribute!==void 0?o.converter:ue;this._$Em=i;let c=s.fromAttribute(t,o.type);this[i]=c??this._$Ej?.get(i)??c,this._$Em=null}}requestUpdate(e,t,n,i=!1,o){if(e!==void 0){let s=this.constructor;if(i===!1&&(o=this[e]),n??=s.getPropertyOptions(e),!((n.hasChanged??Ve)(o,t)||n.useDefault&&n.reflect&&o===this._$Ej?.get(e)&&!this.hasAttribute(s._$Eu(e,n))))return;this.C(e,t,n)}this.isUpdatePending===!1&&(this._$ES=this._$EP())}C(e,t,{useDefault:n,reflect:i,wrapped:o},s){n&&!(this._$Ej??=new Map).has(e)&&(this._$Ej.set(e,s??t??this[e]),o!==!0||s!==void 0)||(this._$AL.has(e)||(this.hasUpdated||n||(t=void 0),this._$AL.set(e,t)),i===!0&&this._$Em!==e&&(this._$Eq??=new Set).add(e))}async _$EP(){this.isUpdatePending=!0;try{await this._$ES}catch(t){Promise.reject(t)}let e=this.scheduleUpdate();return e!=null&&await e,!this.isUpdatePending}scheduleUpdate(){return this.performUpdate()}performUpdate(){if(!this.isUpdatePending)return;if(!this.hasUpdated){if(this.renderRoot??=this.createRenderRoot(),this._$Ep){for(let[i,o]of this._$Ep)this[i]=o;this._$Ep=void 0}let n=this.constructor.elementProperties;if(n.size>0)for(let[i,o]of n){let{wrapped:s}=o,c=this[i];s!==!0||this._$AL.has(i)||c===void 0||this.C(i,void 0,o,c)}}let e=!1,t=this._$AL;try{e=this.shouldUpdate(t),e?(this.willUpdate(t),this._$EO?.forEach(n=>n.hostUpdate?.()),this.update(t)):this._$EM()}catch(n){throw e=!1,this._$EM(),n}e&&this._$AE(t)}willUpdate(e){}_$AE(e){this._$EO?.forEach(t=>t.hostUpdated?.()),this.hasUpdated||(this.hasUpdated=!0,this.firstUpdated(e)),this.updated(e)}_$EM(){this._$AL=new Map,this.isUpdatePending=!1}get updateComplete(){return this.getUpdateComplete()}getUpdateComplete(){return this._$ES}shouldUpdate(e){return!0}update(e){this._$Eq&&=this._$Eq.forEach(t=>this._$ET(t,this[t])),this._$EM()}updated(e){}firstUpdated(e){}};$.elementStyles=[],$.shadowRootOptions={mode:"open"},$[j("elementProperties")]=new Map,$[j("finalized")]=new Map,Kt?.({ReactiveElement:$}),(G.reactiveElementVersions??=[]).push("2.1.2");var pe=globalThis,je=r=>r,Y=pe.trustedTypes,Be=Y?Y.createPolicy("lit-html",{createHTML:r=>r}):void 0,ge="$lit$",A=`lit$${Math.random().toFixed(9).slice(2)}$`,me="?"+A,Wt=`<${me}>`,C=document,F=()=>C.createComment(""),K=r=>r===null||typeof r!="object"&&typeof r!="function",ye=Array.isArray,Xe=r=>ye(r)||typeof r?.[Symbol.iterator]=="function",he=`[ 	
\f\r]`,B=/<(?:(!--|\/[^a-zA-Z])|(\/?[a-zA-Z][^>\s]*)|(\/?$))/g,Fe=/-->/g,Ke=/>/g,I=RegExp(`>|${he}(?:([^\\s"'>=/]+)(${he}*=${he}*(?:[^ 	
\f\r"'\`<>=]|("|')|))|$)`,"g"),We=/'/g,Je=/"/g,Ze=/^(?:script|style|textarea|title)$/i,be=r=>(e,...t)=>({_$litType$:r,strings:e,values:t}),b=be(1),Hr=be(2),Ur=be(3),x=Symbol.for("lit-noChange"),g=Symbol.for("lit-nothing"),qe=new WeakMap,P=C.createTreeWalker(C,129);function Ge(r,e){if(!ye(r)||!r.hasOwnProperty("raw"))throw Error("invalid template strings array");return Be!==void 0?Be.createHTML(e):e}var Ye=(r,e)=>{let t=r.length-1,n=[],i,o=e===2?"<svg>":e===3?"<math>":"",s=B;for(let c=0;c<t;c++){let a=r[c],d,f,l=-1,h=0;for(;h<a.length&&(s.lastIndex=h,f=s.exec(a),f!==null);)h=s.lastIndex,s===B?f[1]==="!--"?s=Fe:f[1]!==void 0?s=Ke:f[2]!==void 0?(Ze.test(f[2])&&(i=RegExp("</"+f[2],"g")),s=I):f[3]!==void 0&&(s=I):s===I?f[0]===">"?(s=i??B,l=-1):f[1]===void 0?l=-2:(l=s.lastIndex-f[2].length,d=f[1],s=f[3]===void 0?I:f[3]==='"'?Je:We):s===Je||s===We?s=I:s===Fe||s===Ke?s=B:(s=I,i=void 0);let u=s===I&&r[c+1].startsWith("/>")?" ":"";o+=s===B?a+Wt:l>=0?(n.push(d),a.slice(0,l)+ge+a.slice(l)+A+u):a+A+(l===-2?c:u)}return[Ge(r,o+(r[t]||"<?>")+(e===2?"</svg>":e===3?"</math>":"")),n]},W=class r{constructor({strings:e,_$litType$:t},n){let i;this.parts=[];let o=0,s=0,c=e.length-1,a=this.parts,[d,f]=Ye(e,t);if(this.el=r.createElement(d,n),P.currentNode=this.el.content,t===2||t===3){let l=this.el.content.firstChild;l.replaceWith(...l.childNodes)}for(;(i=P.nextNode())!==null&&a.length<c;){if(i.nodeType===1){if(i.hasAttributes())for(let l of i.getAttributeNames())if(l.endsWith(ge)){let h=f[s++],u=i.getAttribute(l).split(A),p=/([.?@])?(.*)/.exec(h);a.push({type:1,index:o,name:p[2],strings:u,ctor:p[1]==="."?ee:p[1]==="?"?te:p[1]==="@"?re:H}),i.removeAttribute(l)}else l.startsWith(A)&&(a.push({type:6,index:o}),i.removeAttribute(l));if(Ze.test(i.tagName)){let l=i.textContent.split(A),h=l.length-1;if(h>0){i.textContent=Y?Y.emptyScript:"";for(let u=0;u<h;u++)i.append(l[u],F()),P.nextNode(),a.push({type:2,index:++o});i.append(l[h],F())}}}else if(i.nodeType===8)if(i.data===me)a.push({type:2,index:o});else{let l=-1;for(;(l=i.data.indexOf(A,l+1))!==-1;)a.push({type:7,index:o}),l+=A.length-1}o++}}static createElement(e,t){let n=C.createElement("template");return n.innerHTML=e,n}};function T(r,e,t=r,n){if(e===x)return e;let i=n!==void 0?t._$Co?.[n]:t._$Cl,o=K(e)?void 0:e._$litDirective$;return i?.constructor!==o&&(i?._$AO?.(!1),o===void 0?i=void 0:(i=new o(r),i._$AT(r,t,n)),n!==void 0?(t._$Co??=[])[n]=i:t._$Cl=i),i!==void 0&&(e=T(r,i._$AS(r,e.values),i,n)),e}var Q=class{constructor(e,t){this._$AV=[],this._$AN=void 0,this._$AD=e,this._$AM=t}get parentNode(){return this._$AM.parentNode}get _$AU(){return this._$AM._$AU}u(e){let{el:{content:t},parts:n}=this._$AD,i=(e?.creationScope??C).importNode(t,!0);P.currentNode=i;let o=P.nextNode(),s=0,c=0,a=n[0];for(;a!==void 0;){if(s===a.index){let d;a.type===2?d=new N(o,o.nextSibling,this,e):a.type===1?d=new a.ctor(o,a.name,a.strings,this,e):a.type===6&&(d=new ne(o,this,e)),this._$AV.push(d),a=n[++c]}s!==a?.index&&(o=P.nextNode(),s++)}return P.currentNode=C,i}p(e){let t=0;for(let n of this._$AV)n!==void 0&&(n.strings!==void 0?(n._$AI(e,n,t),t+=n.strings.length-2):n._$AI(e[t])),t++}},N=class r{get _$AU(){return this._$AM?._$AU??this._$Cv}constructor(e,t,n,i){this.type=2,this._$AH=g,this._$AN=void 0,this._$AA=e,this._$AB=t,this._$AM=n,this.options=i,this._$Cv=i?.isConnected??!0}get parentNode(){let e=this._$AA.parentNode,t=this._$AM;return t!==void 0&&e?.nodeType===11&&(e=t.parentNode),e}get startNode(){return this._$AA}get endNode(){return this._$AB}_$AI(e,t=this){e=T(this,e,t),K(e)?e===g||e==null||e===""?(this._$AH!==g&&this._$AR(),this._$AH=g):e!==this._$AH&&e!==x&&this._(e):e._$litType$!==void 0?this.$(e):e.nodeType!==void 0?this.T(e):Xe(e)?this.k(e):this._(e)}O(e){return this._$AA.parentNode.insertBefore(e,this._$AB)}T(e){this._$AH!==e&&(this._$AR(),this._$AH=this.O(e))}_(e){this._$AH!==g&&K(this._$AH)?this._$AA.nextSibling.data=e:this.T(C.createTextNode(e)),this._$AH=e}$(e){let{values:t,_$litType$:n}=e,i=typeof n=="number"?this._$AC(e):(n.el===void 0&&(n.el=W.createElement(Ge(n.h,n.h[0]),this.options)),n);if(this._$AH?._$AD===i)this._$AH.p(t);else{let o=new Q(i,this),s=o.u(this.options);o.p(t),this.T(s),this._$AH=o}}_$AC(e){let t=qe.get(e.strings);return t===void 0&&qe.set(e.strings,t=new W(e)),t}k(e){ye(this._$AH)||(this._$AH=[],this._$AR());let t=this._$AH,n,i=0;for(let o of e)i===t.length?t.push(n=new r(this.O(F()),this.O(F()),this,this.options)):n=t[i],n._$AI(o),i++;i<t.length&&(this._$AR(n&&n._$AB.nextSibling,i),t.length=i)}_$AR(e=this._$AA.nextSibling,t){for(this._$AP?.(!1,!0,t);e!==this._$AB;){let n=je(e).nextSibling;je(e).remove(),e=n}}setConnected(e){this._$AM===void 0&&(this._$Cv=e,this._$AP?.(e))}},H=class{get tagName(){return this.element.tagName}get _$AU(){return this._$AM._$AU}constructor(e,t,n,i,o){this.type=1,this._$AH=g,this._$AN=void 0,this.element=e,this.name=t,this._$AM=i,this.options=o,n.length>2||n[0]!==""||n[1]!==""?(this._$AH=Array(n.length-1).fill(new String),this.strings=n):this._$AH=g}_$AI(e,t=this,n,i){let o=this.strings,s=!1;if(o===void 0)e=T(this,e,t,0),s=!K(e)||e!==this._$AH&&e!==x,s&&(this._$AH=e);else{let c=e,a,d;for(e=o[0],a=0;a<o.length-1;a++)d=T(this,c[n+a],t,a),d===x&&(d=this._$AH[a]),s||=!K(d)||d!==this._$AH[a],d===g?e=g:e!==g&&(e+=(d??"")+o[a+1]),this._$AH[a]=d}s&&!i&&this.j(e)}j(e){e===g?this.element.removeAttribute(this.name):this.element.setAttribute(this.name,e??"")}},ee=class extends H{constructor(){super(...arguments),this.type=3}j(e){this.element[this.name]=e===g?void 0:e}},te=class extends H{constructor(){super(...arguments),this.type=4}j(e){this.element.toggleAttribute(this.name,!!e&&e!==g)}},re=class extends H{constructor(e,t,n,i,o){super(e,t,n,i,o),this.type=5}_$AI(e,t=this){if((e=T(this,e,t,0)??g)===x)return;let n=this._$AH,i=e===g&&n!==g||e.capture!==n.capture||e.once!==n.once||e.passive!==n.passive,o=e!==g&&(n===g||i);i&&this.element.removeEventListener(this.name,this,n),o&&this.element.addEventListener(this.name,this,e),this._$AH=e}handleEvent(e){typeof this._$AH=="function"?this._$AH.call(this.options?.host??this.element,e):this._$AH.handleEvent(e)}},ne=class{constructor(e,t,n){this.element=e,this.type=6,this._$AN=void 0,this._$AM=t,this.options=n}get _$AU(){return this._$AM._$AU}_$AI(e){T(this,e)}},Qe={M:ge,P:A,A:me,C:1,L:Ye,R:Q,D:Xe,V:T,I:N,H,N:te,U:re,B:ee,F:ne},Jt=pe.litHtmlPolyfillSupport;Jt?.(W,N),(pe.litHtmlVersions??=[]).push("3.3.3");var et=(r,e,t)=>{let n=t?.renderBefore??e,i=n._$litPart$;if(i===void 0){let o=t?.renderBefore??null;n._$litPart$=i=new N(e.insertBefore(F(),o),o,void 0,t??{})}return i._$AI(r),i};var we=globalThis,S=class extends ${constructor(){super(...arguments),this.renderOptions={host:this},this._$Do=void 0}createRenderRoot(){let e=super.createRenderRoot();return this.renderOptions.renderBefore??=e.firstChild,e}update(e){let t=this.render();this.hasUpdated||(this.renderOptions.isConnected=this.isConnected),super.update(e),this._$Do=et(t,this.renderRoot,this.renderOptions)}connectedCallback(){super.connectedCallback(),this._$Do?.setConnected(!0)}disconnectedCallback(){super.disconnectedCallback(),this._$Do?.setConnected(!1)}render(){return x}};S._$litElement$=!0,S.finalized=!0,we.litElementHydrateSupport?.({LitElement:S});var qt=we.litElementPolyfillSupport;qt?.({LitElement:S});(we.litElementVersions??=[]).push("4.2.2");var tt={ATTRIBUTE:1,CHILD:2,PROPERTY:3,BOOLEAN_ATTRIBUTE:4,EVENT:5,ELEMENT:6},rt=r=>(...e)=>({_$litDirective$:r,values:e}),ie=class{constructor(e){}get _$AU(){return this._$AM._$AU}_$AT(e,t,n){this._$Ct=e,this._$AM=t,this._$Ci=n}_$AS(e,t){return this.update(e,t)}update(e,t){return this.render(...t)}};var{I:Xt}=Qe,nt=r=>r;var it=()=>document.createComment(""),L=(r,e,t)=>{let n=r._$AA.parentNode,i=e===void 0?r._$AB:e._$AA;if(t===void 0){let o=n.insertBefore(it(),i),s=n.insertBefore(it(),i);t=new Xt(o,s,r,r.options)}else{let o=t._$AB.nextSibling,s=t._$AM,c=s!==r;if(c){let a;t._$AQ?.(r),t._$AM=r,t._$AP!==void 0&&(a=r._$AU)!==s._$AU&&t._$AP(a)}if(o!==i||c){let a=t._$AA;for(;a!==o;){let d=nt(a).nextSibling;nt(n).insertBefore(a,i),a=d}}}return t},E=(r,e,t=r)=>(r._$AI(e,t),r),Zt={},ot=(r,e=Zt)=>r._$AH=e,st=r=>r._$AH,oe=r=>{r._$AR(),r._$AA.remove()};var at=(r,e,t)=>{let n=new Map;for(let i=e;i<=t;i++)n.set(r[i],i);return n},ct=rt(class extends ie{constructor(r){if(super(r),r.type!==tt.CHILD)throw Error("repeat() can only be used in text expressions")}dt(r,e,t){let n;t===void 0?t=e:e!==void 0&&(n=e);let i=[],o=[],s=0;for(let c of r)i[s]=n?n(c,s):s,o[s]=t(c,s),s++;return{values:o,keys:i}}render(r,e,t){return this.dt(r,e,t).values}update(r,[e,t,n]){let i=st(r),{values:o,keys:s}=this.dt(e,t,n);if(!Array.isArray(i))return this.ut=s,o;let c=this.ut??=[],a=[],d,f,l=0,h=i.length-1,u=0,p=o.length-1;for(;l<=h&&u<=p;)if(i[l]===null)l++;else if(i[h]===null)h--;else if(c[l]===s[u])a[u]=E(i[l],o[u]),l++,u++;else if(c[h]===s[p])a[p]=E(i[h],o[p]),h--,p--;else if(c[l]===s[p])a[p]=E(i[l],o[p]),L(r,a[p+1],i[l]),l++,p--;else if(c[h]===s[u])a[u]=E(i[h],o[u]),L(r,i[l],i[h]),h--,u++;else if(d===void 0&&(d=at(s,u,p),f=at(c,l,h)),d.has(c[l]))if(d.has(c[h])){let y=f.get(s[u]),k=y!==void 0?i[y]:null;if(k===null){let _=L(r,i[l]);E(_,o[u]),a[u]=_}else a[u]=E(k,o[u]),L(r,i[l],k),i[y]=null;u++}else oe(i[h]),h--;else oe(i[l]),l++;for(;u<=p;){let y=L(r,a[p+1]);E(y,o[u]),a[u++]=y}for(;l<=h;){let y=i[l++];y!==null&&oe(y)}return this.ut=s,ot(r,a),x}});var U=class extends Error{constructor(t,n){super(n);this.status=t}status;name="ApiError"};async function dt(r){let e=new URL("api/events",r.baseUrl);for(let[s,c]of Object.entries(r.filters))typeof c=="string"&&c.length>0&&e.searchParams.set(s,c);e.searchParams.set("limit",String(r.limit)),r.cursor!==void 0&&e.searchParams.set("cursor",r.cursor);let t=await fetch(e,{headers:{authorization:`Bearer ${r.token}`,accept:"application/json"},...r.signal?{signal:r.signal}:{}}),n=await Gt(t);if(!t.ok){let s=ve(n)&&typeof n.error=="string"?n.error:`HTTP ${t.status}`;throw new U(t.status,s)}if(!ve(n)||!Array.isArray(n.events))throw new U(t.status,"unexpected answer from the audit service");let i=n.events.filter(Yt),o=typeof n.nextCursor=="string"?n.nextCursor:null;return{events:i,nextCursor:o}}async function Gt(r){try{return await r.json()}catch{return}}function ve(r){return typeof r=="object"&&r!==null&&!Array.isArray(r)}function Yt(r){return ve(r)&&typeof r.eventId=="string"&&typeof r.occurredAt=="string"&&typeof r.entityType=="string"&&typeof r.entityId=="string"&&typeof r.actorId=="string"&&Array.isArray(r.changes??[])}var Qt={"&amp;":"&","&lt;":"<","&gt;":">","&quot;":'"',"&#x27;":"'"};function lt(r){return r.replace(/&(?:amp|lt|gt|quot|#x27);/g,e=>Qt[e]??e)}function se(r){return typeof r=="string"?lt(r):Array.isArray(r)?r.map(se):typeof r=="object"&&r!==null?Object.fromEntries(Object.entries(r).map(([e,t])=>[lt(e),se(t)])):r}function ae(r){return JSON.stringify(r,null,2)??"null"}function ft(r){let e=new Date(r);if(Number.isNaN(e.getTime()))return r;let t=n=>String(n).padStart(2,"0");return`${e.getFullYear()}-${t(e.getMonth()+1)}-${t(e.getDate())} ${t(e.getHours())}:${t(e.getMinutes())}:${t(e.getSeconds())}`}function $e(r,e){if(r.length===0)return;let t=new Date(r);if(!Number.isNaN(t.getTime())){if(e){let n=/T\d{2}:\d{2}:\d{2}/.test(r);t.setTime(t.getTime()+(n?999:59999))}return t.toISOString()}}var ut="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",ht=new Int16Array(128).fill(-1);for(let r=0;r<ut.length;r++)ht[ut.charCodeAt(r)]=r;function v(r){if(r.length%4!==0)return;let e=r.endsWith("==")?2:r.endsWith("=")?1:0,t=new Uint8Array(r.length/4*3-e),n=0;for(let i=0;i<r.length;i+=4){let o=i+4===r.length,s=[0,0,0,0];for(let d=0;d<4;d++){let f=r.charCodeAt(i+d);if(o&&d>=4-e){if(f!==61)return;continue}let l=f<128?ht[f]??-1:-1;if(l<0)return;s[d]=l}let c=(s[0]??0)<<18|(s[1]??0)<<12|(s[2]??0)<<6,a=c|(s[3]??0);if(o&&e===2&&(c&65535)!==0||o&&e===1&&(a&255)!==0)return;t[n++]=a>>>16,n<t.length&&(t[n++]=a>>>8&255),n<t.length&&(t[n++]=a&255)}return t}function pt(r){let e="";for(let t of r)e+=t.toString(16).padStart(2,"0");return e}function J(...r){let e=0;for(let i of r)e+=i.length;let t=new Uint8Array(e),n=0;for(let i of r)t.set(i,n),n+=i.length;return t}function R(r,e){if(r.length!==e.length)return!1;for(let t=0;t<r.length;t++)if(r[t]!==e[t])return!1;return!0}var er=new TextEncoder;function q(r){return er.encode(r)}var tr=/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;function Ae(r){return!tr.test(r)}function gt(r){try{return new TextDecoder("utf-8",{fatal:!0,ignoreBOM:!0}).decode(r)}catch{return}}var m=class extends Error{constructor(t,n){super(n);this.code=t}code;name="TlogError"};var rr=1,mt="\u2014 ",nr=100;function bt(r){return r!==""&&Ae(r)&&!/\p{White_Space}/u.test(r)&&!r.includes("+")}async function ir(r,e,t){let n=await r.sha256(q(e),new Uint8Array([10]),t);return((n[0]??0)<<24|(n[1]??0)<<16|(n[2]??0)<<8|(n[3]??0))>>>0}function or(r){return r.toString(16).padStart(8,"0")}function xe(r,e){let t=r.indexOf(e);return t<0?[r,""]:[r.slice(0,t),r.slice(t+e.length)]}function sr(r){return/^[0-9a-fA-F]{8}$/.test(r)?Number.parseInt(r,16):void 0}async function wt(r,e){let[t,n]=xe(e,"+"),[i,o]=xe(n,"+"),s=sr(i),c=v(o);if(s===void 0||c===void 0||!bt(t)||c.length===0)throw new m("malformed","malformed verifier id");if(s!==await ir(r,t,c))throw new m("malformed","invalid verifier hash");if(c[0]!==rr)throw new m("malformed","unknown verifier algorithm");if(c.length!==33)throw new m("malformed","malformed verifier id");return{name:t,keyId:s,publicKey:c.slice(1),encoded:e}}function ar(r){let e=r.lastIndexOf(`

`);if(e<0)return;let t=r.slice(e+2);if(!(t.length===0||!t.endsWith(`
`)))return{text:r.slice(0,e+1),sigs:t}}function cr(r){return((r[0]??0)<<24|(r[1]??0)<<16|(r[2]??0)<<8|(r[3]??0))>>>0}async function vt(r,e,t){let n="publicKey"in t?[t]:t,i=()=>new m("malformed","malformed note"),o=typeof e=="string"?e:gt(e);if(o===void 0||!Ae(o)||/[\u0000-\u0009\u000b-\u001f]/.test(o))throw i();let s=ar(o);if(s===void 0)throw i();let{text:c}=s,{sigs:a}=s,d=[],f=[],l=new Set,h=0;for(;a.length>0;){let u=a.indexOf(`
`),p=a.slice(0,u);if(a=a.slice(u+1),!p.startsWith(mt))throw i();p=p.slice(mt.length);let[y,k]=xe(p," "),_=v(k);if(_===void 0||!bt(y)||k===""||_.length<5)throw i();let O=cr(_);if(++h>nr)throw i();let Ne=n.find(D=>D.name===y&&D.keyId===O);if(Ne===void 0){l.has(p)||(l.add(p),f.push({name:y,keyId:O,base64:k}));continue}if(!d.some(D=>D.name===y&&D.keyId===O)){if(!await r.ed25519Verify(Ne.publicKey,q(c),_.subarray(4)))throw new m("bad-signature",`invalid signature for key ${y}+${or(O)}`);d.push({name:y,keyId:O,base64:k})}}if(d.length===0)throw new m("unverified","note has no verifiable signatures");return{text:c,sigs:d,unverifiedSigs:f}}var z=32,dr=new Uint8Array([0]),lr=new Uint8Array([1]);function fr(r){let e=0;for(;2**(e+1)<r;)e++;return{k:2**e,l:e}}async function Ee(r,e){return r.sha256(dr,e)}async function $t(r,e,t){return r.sha256(lr,e,t)}async function At(r,e,t,n,i,o){if(!Number.isSafeInteger(t)||!Number.isSafeInteger(i)||t<0||i<0||i>=t)throw new m("invalid-input","tlog: invalid inputs in checkRecord");let s=await Se(r,e,0,t,i,o);if(!R(s,n))throw ke()}function ke(){return new m("proof-failed","invalid transparency proof")}async function Se(r,e,t,n,i,o){if(!(t<=i&&i<n))throw new Error("tlog: bad math in runRecordProof");if(t+1===n){if(e.length!==0)throw ke();return o}if(e.length===0)throw ke();let s=e[e.length-1],c=e.slice(0,-1),{k:a}=fr(n-t);return i<t+a?$t(r,await Se(r,c,t,t+a,i,o),s):$t(r,s,await Se(r,c,t+a,n,i,o))}function ur(r){let e=d=>new m("malformed",`malformed checkpoint: ${d}`);if(!r.endsWith(`
`))throw e("text does not end in a newline");let t=r.slice(0,-1).split(`
`),[n,i,o,...s]=t;if(n===void 0||n==="")throw e("no origin line");if(i===void 0||!/^(0|[1-9][0-9]*)$/.test(i))throw e("tree size is not a decimal number");let c=Number(i);if(!Number.isSafeInteger(c))throw e("tree size too large");let a=o===void 0?void 0:v(o);if(a===void 0||a.length!==z)throw e("root hash is not 32 bytes of base64");if(s.some(d=>d===""))throw e("empty extension line");return{origin:n,size:c,rootHash:a}}async function _e(r,e,t,n){let i=await vt(r,e,t),o=ur(i.text);if(!i.sigs.some(s=>s.name===o.origin)){let s=[...new Set(i.sigs.map(c=>c.name))];throw new m("invalid-input",`checkpoint is for log ${JSON.stringify(o.origin)}, not for the key's log ${s.map(c=>JSON.stringify(c)).join(", ")}`)}if(n!==void 0&&o.origin!==n)throw new m("invalid-input",`checkpoint is for log ${JSON.stringify(o.origin)}, not ${JSON.stringify(n)}`);return{...o,note:typeof e=="string"?e:new TextDecoder().decode(e),signatures:i.sigs}}var xt=new Uint8Array([48,46,2,1,0,48,5,6,3,43,101,112,4,34,4,32]);function hr(r){let e=r.replaceAll("-","+").replaceAll("_","/"),t=atob(e+"=".repeat((4-e.length%4)%4)),n=new Uint8Array(t.length);for(let i=0;i<t.length;i++)n[i]=t.charCodeAt(i);return n}function Ie(r=globalThis.crypto?.subtle){if(r===void 0)throw new Error("WebCrypto (crypto.subtle) is not available here");let e={name:"Ed25519"};return{async sha256(...t){return new Uint8Array(await r.digest("SHA-256",J(...t)))},async ed25519PublicKey(t){let n=await r.importKey("pkcs8",J(xt,t),e,!0,["sign"]),i=await r.exportKey("jwk",n);if(i.x===void 0)throw new Error("WebCrypto returned no Ed25519 public key");return hr(i.x)},async ed25519Sign(t,n){let i=await r.importKey("pkcs8",J(xt,t),e,!1,["sign"]);return new Uint8Array(await r.sign(e,i,n))},async ed25519Verify(t,n,i){if(t.length!==32||i.length!==64)return!1;let o=await r.importKey("raw",t,e,!1,["verify"]);return r.verify(e,o,i,n)}}}function pr(r){return Ce(r,void 0,"$")}function kt(r){return q(pr(r))}function gr(r,e){let t=[e];for(let n=r;n;n=n.parent)t.unshift(n.step);return t.map((n,i)=>i===0?String(n):typeof n=="number"?`[${n}]`:`.${n}`).join("")}function Pe(r,e,t){throw new m("malformed",`cannot canonicalize ${gr(r,e)}: ${t}`)}function Ce(r,e,t){switch(typeof r){case"string":return JSON.stringify(r);case"number":return Number.isFinite(r)||Pe(e,t,`${r} is not a JSON number`),String(r);case"boolean":return r?"true":"false";case"object":break;default:Pe(e,t,`${typeof r} is not a JSON value`)}if(r===null)return"null";let n={parent:e,step:t};if(Array.isArray(r)){let a="[";for(let d=0;d<r.length;d++)d>0&&(a+=","),a+=Ce(r[d],n,d);return`${a}]`}let i=Object.getPrototypeOf(r);i!==Object.prototype&&i!==null&&Pe(e,t,"not a plain JSON object");let o=r,s=Object.keys(o).sort(),c="{";for(let a=0;a<s.length;a++){let d=s[a];a>0&&(c+=","),c+=`${JSON.stringify(d)}:${Ce(o[d],n,d)}`}return`${c}}`}var Te=1,He=65,ce=32,mr=["eventId","receivedAt","occurredAt","actionKey","action","actionDescription","entityType","entityId","actorType","actorId","actorDisplay","tenantId","source","context","changes"],St=/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;function w(r){return new m("malformed",r)}function yr(r){let e={};for(let t of mr)Object.hasOwn(r,t)&&r[t]!==void 0&&(e[t]=r[t]);return e}async function br(r,e,t){if(e.length!==ce)throw w(`a salt is ${ce} bytes`);return r.sha256(e,kt(yr(t)))}function Et(r){let e=Date.parse(r);if(Number.isNaN(e)||new Date(e).toISOString()!==r)throw w(`receivedAt ${JSON.stringify(r)} is not a UTC date-time with milliseconds`);return e}function wr(r){let{logIndex:e,receivedAtMs:t,eventId:n,commitment:i}=r;if(!Number.isSafeInteger(e)||e<0)throw w("bad logIndex");if(!Number.isSafeInteger(t))throw w("bad receivedAt");if(!St.test(n))throw w(`eventId ${JSON.stringify(n)} is not a UUID`);if(i.length!==z)throw w("a commitment is 32 bytes");let o=new Uint8Array(He),s=new DataView(o.buffer);o[0]=Te,s.setBigUint64(1,BigInt(e)),s.setBigInt64(9,BigInt(t));let c=n.replaceAll("-","");for(let a=0;a<16;a++)o[17+a]=Number.parseInt(c.slice(2*a,2*a+2),16);return o.set(i,33),o}function Ue(r){if(r.length!==He||r[0]!==Te)throw w(`not a version-${Te} leaf of ${He} bytes`);let e=new DataView(r.buffer,r.byteOffset,r.byteLength),t=e.getBigUint64(1),n=e.getBigInt64(9);if(t>BigInt(Number.MAX_SAFE_INTEGER))throw w("logIndex out of range");let i=pt(r.subarray(17,33));return{logIndex:Number(t),receivedAtMs:Number(n),eventId:`${i.slice(0,8)}-${i.slice(8,12)}-${i.slice(12,16)}-${i.slice(16,20)}-${i.slice(20)}`,commitment:r.slice(33,65)}}async function _t(r,e){let{eventId:t,receivedAt:n,logIndex:i,salt:o}=e;if(typeof t!="string"||!St.test(t))throw w("no valid eventId");if(typeof n!="string")throw w("no receivedAt");if(typeof i!="number"||!Number.isSafeInteger(i)||i<0)throw w("no logIndex");let s=typeof o=="string"?v(o):void 0;if(s===void 0||s.length!==ce)throw w(`no salt of ${ce} bytes in base64`);let c=await br(r,s,e),a=wr({logIndex:i,receivedAtMs:Et(n),eventId:t,commitment:c});return{eventId:t,logIndex:i,leaf:a}}function It(r,e){if(R(r,e))return;let t;try{t=Ue(e)}catch{return"the service's leaf is not a valid leaf"}let n=Ue(r),i=[];return n.logIndex!==t.logIndex&&i.push(`logIndex ${t.logIndex}`),n.eventId!==t.eventId&&i.push(`eventId ${t.eventId}`),n.receivedAtMs!==t.receivedAtMs&&i.push(`receivedAt ${new Date(t.receivedAtMs).toISOString()}`),R(n.commitment,t.commitment)||i.push("a commitment to other content"),`the service's leaf has ${i.join(", ")}`}function Pt(r){return r instanceof Error?r.message:String(r)}function vr(r){return r.map(e=>{let t=v(e);if(t===void 0||t.length!==z)throw new m("malformed","a proof hash is not 32 bytes of base64");return t})}async function Ct(r,e,t,n){let i,o;try{({leaf:i,logIndex:o}=await _t(r,e))}catch(f){return`cannot recompute its leaf: ${Pt(f)}`}let s=Number(t.logIndex),c=Number(t.treeSize);if(s!==o)return`the service places it at logIndex ${t.logIndex}, the event says ${o}`;if(c!==n.size)return`the proof is for tree size ${t.treeSize}, not the checkpoint's ${n.size}`;let a=v(t.leaf);if(a===void 0)return"the service's leaf is not base64";let d=It(i,a);if(d!==void 0)return`its content or metadata changed since it was logged: ${d}`;try{await At(r,vr(t.hashes),n.size,n.rootHash,o,await Ee(r,i))}catch(f){return f instanceof m&&f.code==="proof-failed"?"its inclusion proof does not lead to the checkpoint's root (the event or the tree was changed)":`its inclusion proof is unusable: ${Pt(f)}`}}async function Tt(r,e){let t=e.split(/\s+/).filter(o=>o!=="");if(t.length===0)throw new m("malformed","no verifier key given");let n=await Promise.all(t.map(o=>wt(r,o))),i=new Set(n.map(o=>o.name));if(i.size>1)throw new m("malformed",`the verifier keys name different logs: ${[...i].join(", ")}`);return n}function Rt(r){let e,t,n=async s=>fetch(new URL(s,r.baseUrl),{headers:{authorization:`Bearer ${await r.token()}`}}),i=async s=>{let c=await n(s),a=await c.text();if(!c.ok)throw new Error(Ut(a,c.status));return a},o=async()=>{e??=Ie();let s=r.verifierKey.trim()||(await i("api/log/key")).trim();return _e(e,await i("api/log/checkpoint"),await Tt(e,s))};return{async verify(s){let c;try{if(t??=o(),c=await t,typeof s.logIndex=="number"&&s.logIndex>=c.size&&(t=o(),c=await t,s.logIndex>=c.size))return{state:"pending",reason:"not yet in a signed checkpoint"}}catch(a){return t=void 0,{state:"failed",reason:`checkpoint: ${Ht(a)}`}}try{let a=String(s.eventId),d=await n(`api/log/proof/inclusion?eventId=${encodeURIComponent(a)}&treeSize=${c.size}`),f=await d.text();if(!d.ok)return{state:"failed",reason:Ut(f,d.status)};let l=await Ct(e??Ie(),s,JSON.parse(f),c);return l===void 0?{state:"verified",treeSize:c.size}:{state:"failed",reason:l}}catch(a){return{state:"failed",reason:Ht(a)}}}}}function Ht(r){return r instanceof Error?r.message:String(r)}function Ut(r,e){try{let t=JSON.parse(r);if(typeof t.error=="string")return t.error}catch{}return`HTTP ${e}`}var M=class extends Error{name="TokenProviderError"},$r=15e3,Ar=1e3;function xr(r){let e=r.split(".")[1];if(e===void 0)return{};try{let t=e.replace(/-/g,"+").replace(/_/g,"/"),n=JSON.parse(atob(t.padEnd(Math.ceil(t.length/4)*4,"=")));if(typeof n!="object"||n===null)return{};let{iat:i,exp:o}=n;return{...typeof i=="number"?{issuedAt:i}:{},...typeof o=="number"?{expiresAt:o}:{}}}catch{return{}}}function Nt(r){let e=()=>Date.now(),t,n,i,o,s,c=()=>{if(s!==void 0&&clearTimeout(s),s=void 0,i===void 0)return;let f=Math.max(Ar,i-e());s=setTimeout(()=>{d().catch(()=>{})},f)},a=(f,l)=>{if(f===t){s!==void 0&&clearTimeout(s),s=void 0;return}t=f;let{issuedAt:h,expiresAt:u}=xr(f);if(u===void 0)n=void 0,i=void 0;else{let p=h!==void 0&&u>h?(u-h)*1e3:u*1e3-l,y=Math.min($r,Math.max(0,p)/2);n=l+p,i=n-y}c()},d=()=>(o??=(async()=>{let f;try{f=await r()}catch(l){throw new M(l instanceof Error?l.message:String(l))}if(typeof f!="string"||f.trim().length===0)throw new M("the token provider returned no token");return a(f.trim(),e()),f.trim()})().finally(()=>{o=void 0}),o);return{async get(){if(o)return o;if(t!==void 0&&(i===void 0||e()<i))return t;let f=t;try{return await d()}catch(l){let h=n===void 0||e()<n;if(f!==void 0&&h)return f;throw l}},refresh:d,stop(){s!==void 0&&clearTimeout(s),s=void 0}}}var Lt=50,kr=200,Sr=["q","actorId","entityType","entityId","action","tenantId"],Re=class extends S{static properties={baseUrl:{attribute:"base-url"},pageSize:{attribute:"page-size",type:Number},tokenProvider:{attribute:!1},events:{state:!0},nextCursor:{state:!0},loading:{state:!0},error:{state:!0},open:{state:!0},verifyProofs:{attribute:"verify",type:Boolean},verifierKey:{attribute:"verifier-key"},verification:{state:!0}};verifier;filters={};tokens;generation=0;inFlight;observer;observed;constructor(){super(),this.baseUrl="",this.pageSize=Lt,this.tokenProvider=void 0,this.events=[],this.nextCursor=null,this.loading=!1,this.error=void 0,this.open=new Set,this.verifyProofs=!1,this.verifierKey="",this.verification=new Map}connectedCallback(){super.connectedCallback(),this.observer=new IntersectionObserver(e=>{e.some(t=>t.isIntersecting)&&this.loadMore()}),this.tokens&&this.hasUpdated&&this.events.length===0&&this.reload(),this.requestUpdate()}disconnectedCallback(){super.disconnectedCallback(),this.observer?.disconnect(),this.observer=void 0,this.observed=void 0,this.tokens?.stop(),this.inFlight?.abort(),this.loading=!1}willUpdate(e){e.has("tokenProvider")?(this.tokens?.stop(),this.tokens=this.tokenProvider?Nt(this.tokenProvider):void 0,this.reload()):(e.has("baseUrl")||e.has("pageSize"))&&this.hasUpdated&&this.reload()}updated(){let e=this.renderRoot.querySelector(".more")??void 0;this.observer&&(this.observed&&this.observer.unobserve(this.observed),this.observed=e,e&&!this.loading&&this.observer.observe(e))}reload(){this.generation++,this.inFlight?.abort(),this.inFlight=void 0,this.events=[],this.nextCursor=null,this.open=new Set,this.verification=new Map,this.verifier=void 0,this.error=void 0,this.loading=!1,this.tokens&&this.fetchPage(void 0)}loadMore=()=>{this.loading||this.error!==void 0||this.nextCursor===null||this.fetchPage(this.nextCursor)};async fetchPage(e){let t=this.tokens;if(!t)return;let n=this.generation,i=new AbortController;this.inFlight=i,this.loading=!0,this.error=void 0;try{let o=d=>dt({baseUrl:this.serviceUrl(),token:d,filters:this.filters,limit:this.limit(),...e===void 0?{}:{cursor:e},signal:i.signal}),s;try{s=await o(await t.get())}catch(d){if(!(d instanceof U&&d.status===401)||d.message!=="Token expired")throw d;s=await o(await t.refresh())}if(n!==this.generation)return;let c=new Set(this.events.map(d=>d.eventId)),a=s.events.filter(d=>!c.has(d.eventId));this.events=[...this.events,...a.map(Er)],this.verifyProofs&&this.verifyEvents(a,n,t),this.nextCursor=s.nextCursor}catch(o){if(n!==this.generation||i.signal.aborted)return;this.error=_r(o)}finally{n===this.generation&&(this.loading=!1,this.inFlight=void 0)}}verifyEvents(e,t,n){this.verifier??=Rt({baseUrl:this.serviceUrl(),token:()=>n.get(),verifierKey:this.verifierKey??""});let i=this.verifier;(async()=>{for(let o of e){let s=await i.verify(o);if(t!==this.generation)return;this.verification=new Map(this.verification).set(o.eventId,s)}})()}renderProof(e){if(!this.verifyProofs)return g;let t=this.verification.get(e);return t===void 0?b`<span class="proof checking">checking…</span>`:t.state==="verified"?b`<span
        class="proof verified"
        title=${`In the signed log (checkpoint of ${t.treeSize} events), unchanged: checked in this browser`}
        >✓ verified</span
      >`:b`<span class="proof ${t.state}" title=${t.reason}
      >${t.state==="pending"?"\u2026 pending":"\u2717 not verified"}</span
    >`}serviceUrl(){let e=this.baseUrl.trim()||window.location.origin;return e.endsWith("/")?e:`${e}/`}limit(){let e=Math.trunc(Number(this.pageSize));return Number.isFinite(e)&&e>=1?Math.min(e,kr):Lt}onSubmit=e=>{e.preventDefault();let t=e.currentTarget,n=new FormData(t),i={};for(let c of Sr){let a=String(n.get(c)??"").trim();a.length>0&&(i[c]=a)}let o=$e(String(n.get("from")??""),!1),s=$e(String(n.get("to")??""),!0);o&&(i.from=o),s&&(i.to=s),this.filters=i,this.reload()};onReset=()=>{this.filters={},this.reload()};toggle(e){let t=new Set(this.open);t.delete(e)||t.add(e),this.open=t}onRowKey=e=>{let t=[...this.renderRoot.querySelectorAll("button.summary")],n=t.indexOf(e.currentTarget),i=e.key==="ArrowDown"?t[n+1]:e.key==="ArrowUp"?t[n-1]:e.key==="Home"?t[0]:e.key==="End"?t.at(-1):void 0;i&&(e.preventDefault(),i.focus())};retry=()=>{this.events.length===0?this.reload():(this.error=void 0,this.loadMore())};render(){return b`
      <form class="filters" aria-label="Filter events" @submit=${this.onSubmit} @reset=${this.onReset}>
        <label class="search">Search <input type="search" name="q" autocomplete="off" /></label>
        <label>Actor <input name="actorId" autocomplete="off" /></label>
        <label>Entity type <input name="entityType" autocomplete="off" /></label>
        <label>Entity id <input name="entityId" autocomplete="off" /></label>
        <label>Action <input name="action" autocomplete="off" /></label>
        <label>Tenant <input name="tenantId" autocomplete="off" /></label>
        <label>From <input type="datetime-local" name="from" /></label>
        <label>To <input type="datetime-local" name="to" /></label>
        <div class="buttons">
          <button type="submit">Apply</button>
          <button type="reset">Clear</button>
        </div>
      </form>
      ${this.error===void 0?g:b`<div class="error" role="alert">
              <span>${this.error}</span>
              <button type="button" @click=${this.retry}>Try again</button>
            </div>`}
      <p class="status" role="status">${this.statusText()}</p>
      <div
        class=${this.events.length===0?"list empty":"list"}
        aria-busy=${this.loading?"true":"false"}
      >
        ${this.events.length===0?g:b`<div class="head" aria-hidden="true">
                <span>Occurred</span><span>Action</span><span>Actor</span><span>Entity</span
                ><span>Tenant</span>
              </div>`}
        <ul aria-label="Audit events">
          ${ct(this.events,e=>e.eventId,(e,t)=>this.renderRow(e,t))}
        </ul>
        ${this.nextCursor!==null&&this.error===void 0?b`<button type="button" class="more" @click=${this.loadMore}>
                ${this.loading?"Loading\u2026":"Load more"}
              </button>`:g}
      </div>
    `}statusText(){if(!this.tokens)return"Waiting for a frontend token.";let e=this.events.length;if(e===0)return this.loading?"Loading events\u2026":this.error===void 0?"No events match these filters.":"";let t=`${e} ${e===1?"event":"events"}`;return this.loading?`Showing ${t}; loading more\u2026`:this.nextCursor===null?`Showing all ${t}, newest first.`:`Showing ${t}, newest first; scroll for more.`}renderRow(e,t){let n=this.open.has(e.eventId),i=`details-${t}`;return b`<li class="row">
      <button
        type="button"
        class="summary"
        aria-expanded=${n?"true":"false"}
        aria-controls=${n?i:g}
        data-event-id=${e.eventId}
        @click=${()=>this.toggle(e.eventId)}
        @keydown=${this.onRowKey}
      >
        <span class="time"
          ><time datetime=${e.occurredAt}>${ft(e.occurredAt)}</time>
          ${this.renderProof(e.eventId)}</span
        >
        <span class="action">${zt(e)}</span>
        <span class="actor"
          >${e.actorDisplay??e.actorId}
          ${e.actorDisplay===void 0?g:b`<span class="sub">${e.actorId}</span>`}</span
        >
        <span class="entity">${e.entityType} <span class="sub">${e.entityId}</span></span>
        <span class="tenant">${e.tenantId??""}</span>
      </button>
      ${n?this.renderDetails(e,i):g}
    </li>`}renderDetails(e,t){let n=(i,o)=>o===void 0?g:b`<dt>${i}</dt><dd>${o}</dd>`;return b`<section class="details" id=${t} aria-label="Event details">
      <dl>
        ${n("Event id",e.eventId)}
        ${n("Occurred",e.occurredAt)}
        ${n("Received",e.receivedAt)}
        ${n("Action",zt(e))}
        ${n("Description",e.actionDescription)}
        ${n("Actor",`${e.actorDisplay??e.actorId} (${e.actorType} ${e.actorId})`)}
        ${n("Entity",`${e.entityType} ${e.entityId}`)}
        ${n("Tenant",e.tenantId)}
        ${n("Source",e.source)}
      </dl>
      <h3>Changes</h3>
      ${e.changes.length===0?b`<p class="none">No changes recorded.</p>`:b`<table class="diff">
              <thead>
                <tr>
                  <th scope="col">Field</th>
                  <th scope="col" class="op">Op</th>
                  <th scope="col" class="value">Before</th>
                  <th scope="col" class="value">After</th>
                </tr>
              </thead>
              <tbody>
                ${e.changes.map(i=>b`<tr>
                    <th scope="row">
                      <code>${i.path}</code>
                      ${i.redacted?b`<span class="badge">redacted</span>`:g}
                    </th>
                    <td>${i.op}</td>
                    <td><del><pre>${ae(i.before)}</pre></del></td>
                    <td><ins><pre>${ae(i.after)}</pre></ins></td>
                  </tr>`)}
              </tbody>
            </table>`}
      <h3>Context</h3>
      ${e.context===void 0||Object.keys(e.context).length===0?b`<p class="none">No context.</p>`:b`<pre class="json">${ae(e.context)}</pre>`}
    </section>`}static styles=le`
    :host {
      display: block;
      font: 14px/1.4 system-ui, sans-serif;
      color: #1f2328;
      --accent: var(--audit-log-viewer-accent, #0b5cad);
    }
    .filters {
      display: grid;
      grid-template-columns: repeat(auto-fill, minmax(9.5rem, 1fr));
      gap: 0.5rem 0.75rem;
      align-items: end;
      margin-bottom: 0.75rem;
    }
    .filters label {
      display: flex;
      flex-direction: column;
      font-size: 12px;
      font-weight: 600;
      color: #57606a;
    }
    .filters .search {
      grid-column: 1 / -1;
    }
    input {
      box-sizing: border-box;
      height: 2rem;
      font: inherit;
      padding: 0.3rem 0.4rem;
      border: 1px solid #8c959f;
      border-radius: 4px;
      margin-top: 0.15rem;
    }
    .buttons {
      display: flex;
      gap: 0.5rem;
    }
    .buttons button {
      height: 2rem;
    }
    button {
      font: inherit;
      cursor: pointer;
    }
    .buttons button,
    .error button,
    .more {
      padding: 0.3rem 0.8rem;
      border: 1px solid var(--accent);
      border-radius: 4px;
      background: #fff;
      color: var(--accent);
    }
    .buttons button[type="submit"] {
      background: var(--accent);
      color: #fff;
    }
    :focus-visible {
      outline: 2px solid var(--accent);
      outline-offset: 1px;
    }
    .error {
      display: flex;
      gap: 0.75rem;
      align-items: center;
      justify-content: space-between;
      padding: 0.5rem 0.75rem;
      border: 1px solid #cf222e;
      border-radius: 4px;
      background: #ffebe9;
      color: #82071e;
    }
    .status {
      margin: 0.5rem 0;
      color: #57606a;
    }
    .list {
      max-height: var(--audit-log-viewer-max-height, 32rem);
      overflow-y: auto;
      border: 1px solid #d0d7de;
      border-radius: 4px;
    }
    .list.empty {
      border: 0;
    }
    .status:empty {
      margin: 0;
    }
    ul {
      list-style: none;
      margin: 0;
      padding: 0;
    }
    .head,
    .summary {
      display: grid;
      grid-template-columns: 10.5rem 11rem minmax(8rem, 1.2fr) minmax(8rem, 1fr) 6rem;
      gap: 0.75rem;
      padding: 0.4rem 0.75rem;
      text-align: left;
    }
    .head {
      position: sticky;
      top: 0;
      background: #f6f8fa;
      border-bottom: 1px solid #d0d7de;
      font-size: 12px;
      font-weight: 600;
      color: #57606a;
      z-index: 1;
    }
    .row {
      border-bottom: 1px solid #eaeef2;
    }
    .summary {
      width: 100%;
      border: 0;
      background: none;
      color: inherit;
    }
    .summary:hover {
      background: #f6f8fa;
    }
    .summary[aria-expanded="true"] {
      background: #ddf4ff;
    }
    .summary span {
      overflow-wrap: anywhere;
    }
    .sub {
      display: block;
      font-size: 12px;
      color: #57606a;
    }
    .time {
      font-variant-numeric: tabular-nums;
    }
    .proof {
      display: block;
      font-size: 12px;
      color: #57606a;
    }
    .proof.verified {
      color: #1a7f37;
    }
    .proof.failed {
      color: #cf222e;
      font-weight: 600;
    }
    .action {
      font-family: ui-monospace, monospace;
      font-size: 13px;
    }
    .details {
      padding: 0.5rem 0.75rem 0.75rem;
      background: #fbfcfd;
      border-top: 1px solid #eaeef2;
    }
    dl {
      display: grid;
      grid-template-columns: max-content 1fr;
      gap: 0.2rem 1rem;
      margin: 0;
    }
    dt {
      font-weight: 600;
      color: #57606a;
    }
    dd {
      margin: 0;
      overflow-wrap: anywhere;
    }
    h3 {
      font-size: 13px;
      margin: 0.75rem 0 0.35rem;
    }
    .diff {
      border-collapse: collapse;
      width: 100%;
    }
    .diff th,
    .diff td {
      border: 1px solid #d0d7de;
      padding: 0.25rem 0.5rem;
      vertical-align: top;
      text-align: left;
    }
    .diff thead th {
      background: #f6f8fa;
      font-size: 12px;
    }
    .diff .op {
      width: 4rem;
    }
    .diff .value {
      width: 37%;
    }
    del,
    ins {
      display: block;
      text-decoration: none;
    }
    del {
      background: #ffebe9;
      color: #82071e;
    }
    ins {
      background: #dafbe1;
      color: #116329;
    }
    pre {
      margin: 0;
      font: 12px/1.45 ui-monospace, monospace;
      white-space: pre-wrap;
      overflow-wrap: anywhere;
    }
    .json {
      padding: 0.5rem;
      background: #f6f8fa;
      border: 1px solid #d0d7de;
      border-radius: 4px;
      max-height: 16rem;
      overflow: auto;
    }
    .badge {
      margin-left: 0.35rem;
      padding: 0 0.35rem;
      border-radius: 3px;
      background: #fff8c5;
      color: #7d4e00;
      font-size: 11px;
    }
    .none {
      margin: 0;
      color: #57606a;
    }
    .more {
      display: block;
      margin: 0.5rem auto;
    }
  `};function zt(r){return r.actionKey??r.action??""}function Er(r){return se(r)}function _r(r){return r instanceof U?r.status===401?`Not authorized: ${r.message}. The page needs a new frontend token.`:r.status===400?`The service refused these filters: ${r.message}`:`The audit service answered ${r.status}: ${r.message}`:r instanceof M?`Could not get a token: ${r.message}`:`Could not reach the audit service: ${r instanceof Error?r.message:String(r)}`}customElements.get("audit-log-viewer")||customElements.define("audit-log-viewer",Re);export{Re as AuditLogViewer};
/*! Bundled license information:

@lit/reactive-element/css-tag.js:
  (**
   * @license
   * Copyright 2019 Google LLC
   * SPDX-License-Identifier: BSD-3-Clause
   *)

@lit/reactive-element/reactive-element.js:
lit-html/lit-html.js:
lit-element/lit-element.js:
lit-html/directive.js:
lit-html/directives/repeat.js:
  (**
   * @license
   * Copyright 2017 Google LLC
   * SPDX-License-Identifier: BSD-3-Clause
   *)

lit-html/is-server.js:
  (**
   * @license
   * Copyright 2022 Google LLC
   * SPDX-License-Identifier: BSD-3-Clause
   *)

lit-html/directive-helpers.js:
  (**
   * @license
   * Copyright 2020 Google LLC
   * SPDX-License-Identifier: BSD-3-Clause
   *)
*/
