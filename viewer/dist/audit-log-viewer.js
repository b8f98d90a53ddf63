var G=globalThis,X=G.ShadowRoot&&(G.ShadyCSS===void 0||G.ShadyCSS.nativeShadow)&&"adoptedStyleSheets"in Document.prototype&&"replace"in CSSStyleSheet.prototype,de=Symbol(),Le=new WeakMap,j=class{constructor(e,t,r){if(this._$cssResult$=!0,r!==de)throw Error("CSSResult is not constructable. Use `unsafeCSS` or `css` instead.");this.cssText=e,this.t=t}get styleSheet(){let e=this.o,t=this.t;if(X&&e===void 0){let r=t!==void 0&&t.length===1;r&&(e=Le.get(t)),e===void 0&&((this.o=e=new CSSStyleSheet).replaceSync(this.cssText),r&&Le.set(t,e))}return e}toString(){return this.cssText}},ze=n=>new j(typeof n=="string"?n:n+"",void 0,de),le=(n,...e)=>{let t=n.length===1?n[0]:e.reduce((r,i,o)=>r+(s=>{if(s._$cssResult$===!0)return s.cssText;if(typeof s=="number")return s;throw Error("Value passed to 'css' function must be a 'css' function result: "+s+". Use 'unsafeCSS' to pass non-literal values, but take care to ensure page security.")})(i)+n[o+1],n[0]);return new j(t,n,de)},Oe=(n,e)=>{if(X)n.adoptedStyleSheets=e.map(t=>t instanceof CSSStyleSheet?t:t.styleSheet);else for(let t of e){let r=document.createElement("style"),i=G.litNonce;i!==void 0&&r.setAttribute("nonce",i),r.textContent=t.cssText,n.appendChild(r)}},fe=X?n=>n:n=>n instanceof CSSStyleSheet?(e=>{let t="";for(let r of e.cssRules)t+=r.cssText;return ze(t)})(n):n;var{is:Ot,defineProperty:Mt,getOwnPropertyDescriptor:Dt,getOwnPropertyNames:jt,getOwnPropertySymbols:Vt,getPrototypeOf:Bt}=Object,Z=globalThis,Me=Z.trustedTypes,Ft=Me?Me.emptyScript:"",Kt=Z.reactiveElementPolyfillSupport,V=(n,e)=>n,ue={toAttribute(n,e){switch(e){case Boolean:n=n?Ft:null;break;case Object:case Array:n=n==null?n:JSON.stringify(n)}return n},fromAttribute(n,e){let t=n;switch(e){case Boolean:t=n!==null;break;case Number:t=n===null?null:Number(n);break;case Object:case Array:try{t=JSON.parse(n)}catch{t=null}}return t}},je=(n,e)=>!Ot(n,e),De={attribute:!0,type:String,converter:ue,reflect:!1,useDefault:!1,hasChanged:je};Symbol.metadata??=Symbol("metadata"),Z.litPropertyMetadata??=new WeakMap;var $=class extends HTMLElement{static addInitializer(e){this._$Ei(),(this.l??=[]).push(e)}static get observedAttributes(){return this.finalize(),this._$Eh&&[...this._$Eh.keys()]}static createProperty(e,t=De){if(t.state&&(t.attribute=!1),this._$Ei(),this.prototype.hasOwnProperty(e)&&((t=Object.create(t)).wrapped=!0),this.elementProperties.set(e,t),!t.noAccessor){let r=Symbol(),i=this.getPropertyDescriptor(e,r,t);i!==void 0&&Mt(this.prototype,e,i)}}static getPropertyDescriptor(e,t,r){let{get:i,set:o}=Dt(this.prototype,e)??{get(){return this[t]},set(s){this[t]=s}};return{get:i,set(s){let c=i?.call(this);o?.call(this,s),this.requestUpdate(e,c,r)},configurable:!0,enumerable:!0}}static getPropertyOptions(e){return this.elementProperties.get(e)??De}static _$Ei(){if(this.hasOwnProperty(V("elementProperties")))return;let e=Bt(this);e.finalize(),e.l!==void 0&&(this.l=[...e.l]),this.elementProperties=new Map(e.elementProperties)}static finalize(){if(this.hasOwnProperty(V("finalized")))return;if(this.finalized=!0,this._$Ei(),this.hasOwnProperty(V("properties"))){let t=this.properties,r=[...jt(t),...Vt(t)];for(let i of r)this.createProperty(i,t[i])}let e=this[Symbol.metadata];if(e!==null){let t=litPropertyMetadata.get(e);if(t!==void 0)for(let[r,i]of t)this.elementProperties.set(r,i)}this._$Eh=new Map;for(let[t,r]of this.elementProperties){let i=this._$Eu(t,r);i!==void 0&&this._$Eh.set(i,t)}this.elementStyles=this.finalizeStyles(this.styles)}static finalizeStyles(e){let t=[];if(Array.isArray(e)){let r=new Set(e.flat(1/0).reverse());for(let i of r)t.unshift(fe(i))}else e!==void 0&&t.push(fe(e));return t}static _$Eu(e,t){let r=t.attribute;return r===!1?void 0:typeof r=="string"?r:typeof e=="string"?e.toLowerCase():void 0}constructor(){super(),this._$Ep=void 0,this.isUpdatePending=!1,this.hasUpdated=!1,this._$Em=null,this._$Ev()}_$Ev(){this._$ES=new Promise(e=>this.enableUpdating=e),this._$AL=new Map,this._$E_(),this.requestUpdate(),this.constructor.l?.forEach(e=>e(this))}addController(e){(this._$EO??=new Set).add(e),this.renderRoot!==void 0&&this.isConnected&&e.hostConnected?.()}removeController(e){this._$EO?.delete(e)}_$E_(){let e=new Map,t=this.constructor.elementProperties;for(let r of t.keys())this.hasOwnProperty(r)&&(e.set(r,this[r]),delete this[r]);e.size>0&&(this._$Ep=e)}createRenderRoot(){let e=this.shadowRoot??this.attachShadow(this.constructor.shadowRootOptions);return Oe(e,this.constructor.elementStyles),e}connectedCallback(){this.renderRoot??=this.createRenderRoot(),this.enableUpdating(!0),this._$EO?.forEach(e=>e.hostConnected?.())}enableUpdating(e){}disconnectedCallback(){this._$EO?.forEach(e=>e.hostDisconnected?.())}attributeChangedCallback(e,t,r){this._$AK(e,r)}_$ET(e,t){let r=this.constructor.elementProperties.get(e),i=this.constructor._$Eu(e,r);if(i!==void 0&&r.reflect===!0){let o=(r.converter?.toAttribute!==void 0?r.converter:ue).toAttribute(t,r.type);this._$Em=e,o==null?this.removeAttribute(i):this.setAttribute(i,o),this._$Em=null}}_$AK(e,t){let r=this.constructor,i=r._$Eh.get(e);if(i!==void 0&&this._$Em!==i){let o=r.getPropertyOptions(i),s=typeof o.converter=="function"?{fromAttribute:o.converter}:o.converter?.fromAttribute!==void 0?o.converter:ue;this._$Em=i;let c=s.fromAttribute(t,o.type);this[i]=c??this._$Ej?.get(i)??c,this._$Em=null}}requestUpdate(e,t,r,i=!1,o){if(e!==void 0){let s=this.constructor;if(i===!1&&(o=this[e]),r??=s.getPropertyOptions(e),!((r.hasChanged??je)(o,t)||r.useDefault&&r.reflect&&o===this._$Ej?.get(e)&&!this.hasAttribute(s._$Eu(e,r))))return;this.C(e,t,r)}this.isUpdatePending===!1&&(this._$ES=this._$EP())}C(e,t,{useDefault:r,reflect:i,wrapped:o},s){r&&!(this._$Ej??=new Map).has(e)&&(this._$Ej.set(e,s??t??this[e]),o!==!0||s!==void 0)||(this._$AL.has(e)||(this.hasUpdated||r||(t=void 0),this._$AL.set(e,t)),i===!0&&this._$Em!==e&&(this._$Eq??=new Set).add(e))}async _$EP(){this.isUpdatePending=!0;try{await this._$ES}catch(t){Promise.reject(t)}let e=this.scheduleUpdate();return e!=null&&await e,!this.isUpdatePending}scheduleUpdate(){return this.performUpdate()}performUpdate(){if(!this.isUpdatePending)return;if(!this.hasUpdated){if(this.renderRoot??=this.createRenderRoot(),this._$Ep){for(let[i,o]of this._$Ep)this[i]=o;this._$Ep=void 0}let r=this.constructor.elementProperties;if(r.size>0)for(let[i,o]of r){let{wrapped:s}=o,c=this[i];s!==!0||this._$AL.has(i)||c===void 0||this.C(i,void 0,o,c)}}let e=!1,t=this._$AL;try{e=this.shouldUpdate(t),e?(this.willUpdate(t),this._$EO?.forEach(r=>r.hostUpdate?.()),this.update(t)):this._$EM()}catch(r){throw e=!1,this._$EM(),r}e&&this._$AE(t)}willUpdate(e){}_$AE(e){this._$EO?.forEach(t=>t.hostUpdated?.()),this.hasUpdated||(this.hasUpdated=!0,this.firstUpdated(e)),this.updated(e)}_$EM(){this._$AL=new Map,this.isUpdatePending=!1}get updateComplete(){return this.getUpdateComplete()}getUpdateComplete(){return this._$ES}shouldUpdate(e){return!0}update(e){this._$Eq&&=this._$Eq.forEach(t=>this._$ET(t,this[t])),this._$EM()}updated(e){}firstUpdated(e){}};$.elementStyles=[],$.shadowRootOptions={mode:"open"},$[V("elementProperties")]=new Map,$[V("finalized")]=new Map,Kt?.({ReactiveElement:$}),(Z.reactiveElementVersions??=[]).push("2.1.2");var pe=globalThis,Ve=n=>n,Y=pe.trustedTypes,Be=Y?Y.createPolicy("lit-html",{createHTML:n=>n}):void 0,ge="$lit$",x=`lit$${Math.random().toFixed(9).slice(2)}$`,me="?"+x,Jt=`<${me}>`,C=document,F=()=>C.createComment(""),K=n=>n===null||typeof n!="object"&&typeof n!="function",ye=Array.isArray,Ge=n=>ye(n)||typeof n?.[Symbol.iterator]=="function",he=`[ 	
\f\r]`,B=/<(?:(!--|\/[^a-zA-Z])|(\/?[a-zA-Z][^>\s]*)|(\/?$))/g,Fe=/-->/g,Ke=/>/g,I=RegExp(`>|${he}(?:([^\\s"'>=/]+)(${he}*=${he}*(?:[^ 	
\f\r"'\`<>=]|("|')|))|$)`,"g"),Je=/'/g,We=/"/g,Xe=/^(?:script|style|textarea|title)$/i,be=n=>(e,...t)=>({_$litType$:n,strings:e,values:t}),b=be(1),Nn=be(2),Ln=be(3),A=Symbol.for("lit-noChange"),g=Symbol.for("lit-nothing"),qe=new WeakMap,P=C.createTreeWalker(C,129);function Ze(n,e){if(!ye(n)||!n.hasOwnProperty("raw"))throw Error("invalid template strings array");return Be!==void 0?Be.createHTML(e):e}var Ye=(n,e)=>{let t=n.length-1,r=[],i,o=e===2?"<svg>":e===3?"<math>":"",s=B;for(let c=0;c<t;c++){let a=n[c],d,f,l=-1,h=0;for(;h<a.length&&(s.lastIndex=h,f=s.exec(a),f!==null);)h=s.lastIndex,s===B?f[1]==="!--"?s=Fe:f[1]!==void 0?s=Ke:f[2]!==void 0?(Xe.test(f[2])&&(i=RegExp("</"+f[2],"g")),s=I):f[3]!==void 0&&(s=I):s===I?f[0]===">"?(s=i??B,l=-1):f[1]===void 0?l=-2:(l=s.lastIndex-f[2].length,d=f[1],s=f[3]===void 0?I:f[3]==='"'?We:Je):s===We||s===Je?s=I:s===Fe||s===Ke?s=B:(s=I,i=void 0);let u=s===I&&n[c+1].startsWith("/>")?" ":"";o+=s===B?a+Jt:l>=0?(r.push(d),a.slice(0,l)+ge+a.slice(l)+x+u):a+x+(l===-2?c:u)}return[Ze(n,o+(n[t]||"<?>")+(e===2?"</svg>":e===3?"</math>":"")),r]},J=class n{constructor({strings:e,_$litType$:t},r){let i;this.parts=[];let o=0,s=0,c=e.length-1,a=this.parts,[d,f]=Ye(e,t);if(this.el=n.createElement(d,r),P.currentNode=this.el.content,t===2||t===3){let l=this.el.content.firstChild;l.replaceWith(...l.childNodes)}for(;(i=P.nextNode())!==null&&a.length<c;){if(i.nodeType===1){if(i.hasAttributes())for(let l of i.getAttributeNames())if(l.endsWith(ge)){let h=f[s++],u=i.getAttribute(l).split(x),p=/([.?@])?(.*)/.exec(h);a.push({type:1,index:o,name:p[2],strings:u,ctor:p[1]==="."?ee:p[1]==="?"?te:p[1]==="@"?ne:H}),i.removeAttribute(l)}else l.startsWith(x)&&(a.push({type:6,index:o}),i.removeAttribute(l));if(Xe.test(i.tagName)){let l=i.textContent.split(x),h=l.length-1;if(h>0){i.textContent=Y?Y.emptyScript:"";for(let u=0;u<h;u++)i.append(l[u],F()),P.nextNode(),a.push({type:2,index:++o});i.append(l[h],F())}}}else if(i.nodeType===8)if(i.data===me)a.push({type:2,index:o});else{let l=-1;for(;(l=i.data.indexOf(x,l+1))!==-1;)a.push({type:7,index:o}),l+=x.length-1}o++}}static createElement(e,t){let r=C.createElement("template");return r.innerHTML=e,r}};function T(n,e,t=n,r){if(e===A)return e;let i=r!==void 0?t._$Co?.[r]:t._$Cl,o=K(e)?void 0:e._$litDirective$;return i?.constructor!==o&&(i?._$AO?.(!1),o===void 0?i=void 0:(i=new o(n),i._$AT(n,t,r)),r!==void 0?(t._$Co??=[])[r]=i:t._$Cl=i),i!==void 0&&(e=T(n,i._$AS(n,e.values),i,r)),e}var Q=class{constructor(e,t){this._$AV=[],this._$AN=void 0,this._$AD=e,this._$AM=t}get parentNode(){return this._$AM.parentNode}get _$AU(){return this._$AM._$AU}u(e){let{el:{content:t},parts:r}=this._$AD,i=(e?.creationScope??C).importNode(t,!0);P.currentNode=i;let o=P.nextNode(),s=0,c=0,a=r[0];for(;a!==void 0;){if(s===a.index){let d;a.type===2?d=new N(o,o.nextSibling,this,e):a.type===1?d=new a.ctor(o,a.name,a.strings,this,e):a.type===6&&(d=new re(o,this,e)),this._$AV.push(d),a=r[++c]}s!==a?.index&&(o=P.nextNode(),s++)}return P.currentNode=C,i}p(e){let t=0;for(let r of this._$AV)r!==void 0&&(r.strings!==void 0?(r._$AI(e,r,t),t+=r.strings.length-2):r._$AI(e[t])),t++}},N=class n{get _$AU(){return this._$AM?._$AU??this._$Cv}constructor(e,t,r,i){this.type=2,this._$AH=g,this._$AN=void 0,this._$AA=e,this._$AB=t,this._$AM=r,this.options=i,this._$Cv=i?.isConnected??!0}get parentNode(){let e=this._$AA.parentNode,t=this._$AM;return t!==void 0&&e?.nodeType===11&&(e=t.parentNode),e}get startNode(){return this._$AA}get endNode(){return this._$AB}_$AI(e,t=this){e=T(this,e,t),K(e)?e===g||e==null||e===""?(this._$AH!==g&&this._$AR(),this._$AH=g):e!==this._$AH&&e!==A&&this._(e):e._$litType$!==void 0?this.$(e):e.nodeType!==void 0?this.T(e):Ge(e)?this.k(e):this._(e)}O(e){return this._$AA.parentNode.insertBefore(e,this._$AB)}T(e){this._$AH!==e&&(this._$AR(),this._$AH=this.O(e))}_(e){this._$AH!==g&&K(this._$AH)?this._$AA.nextSibling.data=e:this.T(C.createTextNode(e)),this._$AH=e}$(e){let{values:t,_$litType$:r}=e,i=typeof r=="number"?this._$AC(e):(r.el===void 0&&(r.el=J.createElement(Ze(r.h,r.h[0]),this.options)),r);if(this._$AH?._$AD===i)this._$AH.p(t);else{let o=new Q(i,this),s=o.u(this.options);o.p(t),this.T(s),this._$AH=o}}_$AC(e){let t=qe.get(e.strings);return t===void 0&&qe.set(e.strings,t=new J(e)),t}k(e){ye(this._$AH)||(this._$AH=[],this._$AR());let t=this._$AH,r,i=0;for(let o of e)i===t.length?t.push(r=new n(this.O(F()),this.O(F()),this,this.options)):r=t[i],r._$AI(o),i++;i<t.length&&(this._$AR(r&&r._$AB.nextSibling,i),t.length=i)}_$AR(e=this._$AA.nextSibling,t){for(this._$AP?.(!1,!0,t);e!==this._$AB;){let r=Ve(e).nextSibling;Ve(e).remove(),e=r}}setConnected(e){this._$AM===void 0&&(this._$Cv=e,this._$AP?.(e))}},H=class{get tagName(){return this.element.tagName}get _$AU(){return this._$AM._$AU}constructor(e,t,r,i,o){this.type=1,this._$AH=g,this._$AN=void 0,this.element=e,this.name=t,this._$AM=i,this.options=o,r.length>2||r[0]!==""||r[1]!==""?(this._$AH=Array(r.length-1).fill(new String),this.strings=r):this._$AH=g}_$AI(e,t=this,r,i){let o=this.strings,s=!1;if(o===void 0)e=T(this,e,t,0),s=!K(e)||e!==this._$AH&&e!==A,s&&(this._$AH=e);else{let c=e,a,d;for(e=o[0],a=0;a<o.length-1;a++)d=T(this,c[r+a],t,a),d===A&&(d=this._$AH[a]),s||=!K(d)||d!==this._$AH[a],d===g?e=g:e!==g&&(e+=(d??"")+o[a+1]),this._$AH[a]=d}s&&!i&&this.j(e)}j(e){e===g?this.element.removeAttribute(this.name):this.element.setAttribute(this.name,e??"")}},ee=class extends H{constructor(){super(...arguments),this.type=3}j(e){this.element[this.name]=e===g?void 0:e}},te=class extends H{constructor(){super(...arguments),this.type=4}j(e){this.element.toggleAttribute(this.name,!!e&&e!==g)}},ne=class extends H{constructor(e,t,r,i,o){super(e,t,r,i,o),this.type=5}_$AI(e,t=this){if((e=T(this,e,t,0)??g)===A)return;let r=this._$AH,i=e===g&&r!==g||e.capture!==r.capture||e.once!==r.once||e.passive!==r.passive,o=e!==g&&(r===g||i);i&&this.element.removeEventListener(this.name,this,r),o&&this.element.addEventListener(this.name,this,e),this._$AH=e}handleEvent(e){typeof this._$AH=="function"?this._$AH.call(this.options?.host??this.element,e):this._$AH.handleEvent(e)}},re=class{constructor(e,t,r){this.element=e,this.type=6,this._$AN=void 0,this._$AM=t,this.options=r}get _$AU(){return this._$AM._$AU}_$AI(e){T(this,e)}},Qe={M:ge,P:x,A:me,C:1,L:Ye,R:Q,D:Ge,V:T,I:N,H,N:te,U:ne,B:ee,F:re},Wt=pe.litHtmlPolyfillSupport;Wt?.(J,N),(pe.litHtmlVersions??=[]).push("3.3.3");var et=(n,e,t)=>{let r=t?.renderBefore??e,i=r._$litPart$;if(i===void 0){let o=t?.renderBefore??null;r._$litPart$=i=new N(e.insertBefore(F(),o),o,void 0,t??{})}return i._$AI(n),i};var we=globalThis,S=class extends ${constructor(){super(...arguments),this.renderOptions={host:this},this._$Do=void 0}createRenderRoot(){let e=super.createRenderRoot();return this.renderOptions.renderBefore??=e.firstChild,e}update(e){let t=this.render();this.hasUpdated||(this.renderOptions.isConnected=this.isConnected),super.update(e),this._$Do=et(t,this.renderRoot,this.renderOptions)}connectedCallback(){super.connectedCallback(),this._$Do?.setConnected(!0)}disconnectedCallback(){super.disconnectedCallback(),this._$Do?.setConnected(!1)}render(){return A}};S._$litElement$=!0,S.finalized=!0,we.litElementHydrateSupport?.({LitElement:S});var qt=we.litElementPolyfillSupport;qt?.({LitElement:S});(we.litElementVersions??=[]).push("4.2.2");var tt={ATTRIBUTE:1,CHILD:2,PROPERTY:3,BOOLEAN_ATTRIBUTE:4,EVENT:5,ELEMENT:6},nt=n=>(...e)=>({_$litDirective$:n,values:e}),ie=class{constructor(e){}get _$AU(){return this._$AM._$AU}_$AT(e,t,r){this._$Ct=e,this._$AM=t,this._$Ci=r}_$AS(e,t){return this.update(e,t)}update(e,t){return this.render(...t)}};var{I:Gt}=Qe,rt=n=>n;var it=()=>document.createComment(""),L=(n,e,t)=>{let r=n._$AA.parentNode,i=e===void 0?n._$AB:e._$AA;if(t===void 0){let o=r.insertBefore(it(),i),s=r.insertBefore(it(),i);t=new Gt(o,s,n,n.options)}else{let o=t._$AB.nextSibling,s=t._$AM,c=s!==n;if(c){let a;t._$AQ?.(n),t._$AM=n,t._$AP!==void 0&&(a=n._$AU)!==s._$AU&&t._$AP(a)}if(o!==i||c){let a=t._$AA;for(;a!==o;){let d=rt(a).nextSibling;rt(r).insertBefore(a,i),a=d}}}return t},E=(n,e,t=n)=>(n._$AI(e,t),n),Xt={},ot=(n,e=Xt)=>n._$AH=e,st=n=>n._$AH,oe=n=>{n._$AR(),n._$AA.remove()};var at=(n,e,t)=>{let r=new Map;for(let i=e;i<=t;i++)r.set(n[i],i);return r},ct=nt(class extends ie{constructor(n){if(super(n),n.type!==tt.CHILD)throw Error("repeat() can only be used in text expressions")}dt(n,e,t){let r;t===void 0?t=e:e!==void 0&&(r=e);let i=[],o=[],s=0;for(let c of n)i[s]=r?r(c,s):s,o[s]=t(c,s),s++;return{values:o,keys:i}}render(n,e,t){return this.dt(n,e,t).values}update(n,[e,t,r]){let i=st(n),{values:o,keys:s}=this.dt(e,t,r);if(!Array.isArray(i))return this.ut=s,o;let c=this.ut??=[],a=[],d,f,l=0,h=i.length-1,u=0,p=o.length-1;for(;l<=h&&u<=p;)if(i[l]===null)l++;else if(i[h]===null)h--;else if(c[l]===s[u])a[u]=E(i[l],o[u]),l++,u++;else if(c[h]===s[p])a[p]=E(i[h],o[p]),h--,p--;else if(c[l]===s[p])a[p]=E(i[l],o[p]),L(n,a[p+1],i[l]),l++,p--;else if(c[h]===s[u])a[u]=E(i[h],o[u]),L(n,i[l],i[h]),h--,u++;else if(d===void 0&&(d=at(s,u,p),f=at(c,l,h)),d.has(c[l]))if(d.has(c[h])){let y=f.get(s[u]),k=y!==void 0?i[y]:null;if(k===null){let _=L(n,i[l]);E(_,o[u]),a[u]=_}else a[u]=E(k,o[u]),L(n,i[l],k),i[y]=null;u++}else oe(i[h]),h--;else oe(i[l]),l++;for(;u<=p;){let y=L(n,a[p+1]);E(y,o[u]),a[u++]=y}for(;l<=h;){let y=i[l++];y!==null&&oe(y)}return this.ut=s,ot(n,a),A}});var U=class extends Error{constructor(t,r){super(r);this.status=t}status;name="ApiError"};async function dt(n){let e=new URL("api/events",n.baseUrl);for(let[s,c]of Object.entries(n.filters))typeof c=="string"&&c.length>0&&e.searchParams.set(s,c);e.searchParams.set("limit",String(n.limit)),n.cursor!==void 0&&e.searchParams.set("cursor",n.cursor);let t=await fetch(e,{headers:{authorization:`Bearer ${n.token}`,accept:"application/json"},...n.signal?{signal:n.signal}:{}}),r=await Zt(t);if(!t.ok){let s=ve(r)&&typeof r.error=="string"?r.error:`HTTP ${t.status}`;throw new U(t.status,s)}if(!ve(r)||!Array.isArray(r.events))throw new U(t.status,"unexpected answer from the audit service");let i=r.events.filter(Yt),o=typeof r.nextCursor=="string"?r.nextCursor:null;return{events:i,nextCursor:o}}async function Zt(n){try{return await n.json()}catch{return}}function ve(n){return typeof n=="object"&&n!==null&&!Array.isArray(n)}function Yt(n){return ve(n)&&typeof n.eventId=="string"&&typeof n.occurredAt=="string"&&typeof n.entityType=="string"&&typeof n.entityId=="string"&&typeof n.actorId=="string"&&Array.isArray(n.changes??[])}var Qt={"&amp;":"&","&lt;":"<","&gt;":">","&quot;":'"',"&#x27;":"'"};function lt(n){return n.replace(/&(?:amp|lt|gt|quot|#x27);/g,e=>Qt[e]??e)}function se(n){return typeof n=="string"?lt(n):Array.isArray(n)?n.map(se):typeof n=="object"&&n!==null?Object.fromEntries(Object.entries(n).map(([e,t])=>[lt(e),se(t)])):n}function ae(n){return JSON.stringify(n,null,2)??"null"}function ft(n){let e=new Date(n);if(Number.isNaN(e.getTime()))return n;let t=r=>String(r).padStart(2,"0");return`${e.getFullYear()}-${t(e.getMonth()+1)}-${t(e.getDate())} ${t(e.getHours())}:${t(e.getMinutes())}:${t(e.getSeconds())}`}function $e(n,e){if(n.length===0)return;let t=new Date(n);if(!Number.isNaN(t.getTime())){if(e){let r=/T\d{2}:\d{2}:\d{2}/.test(n);t.setTime(t.getTime()+(r?999:59999))}return t.toISOString()}}var ut="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",ht=new Int16Array(128).fill(-1);for(let n=0;n<ut.length;n++)ht[ut.charCodeAt(n)]=n;function v(n){if(n.length%4!==0)return;let e=n.endsWith("==")?2:n.endsWith("=")?1:0,t=new Uint8Array(n.length/4*3-e),r=0;for(let i=0;i<n.length;i+=4){let o=i+4===n.length,s=[0,0,0,0];for(let d=0;d<4;d++){let f=n.charCodeAt(i+d);if(o&&d>=4-e){if(f!==61)return;continue}let l=f<128?ht[f]??-1:-1;if(l<0)return;s[d]=l}let c=(s[0]??0)<<18|(s[1]??0)<<12|(s[2]??0)<<6,a=c|(s[3]??0);if(o&&e===2&&(c&65535)!==0||o&&e===1&&(a&255)!==0)return;t[r++]=a>>>16,r<t.length&&(t[r++]=a>>>8&255),r<t.length&&(t[r++]=a&255)}return t}function pt(n){let e="";for(let t of n)e+=t.toString(16).padStart(2,"0");return e}function W(...n){let e=0;for(let i of n)e+=i.length;let t=new Uint8Array(e),r=0;for(let i of n)t.set(i,r),r+=i.length;return t}function R(n,e){if(n.length!==e.length)return!1;for(let t=0;t<n.length;t++)if(n[t]!==e[t])return!1;return!0}var en=new TextEncoder;function q(n){return en.encode(n)}var tn=/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;function xe(n){return!tn.test(n)}function gt(n){try{return new TextDecoder("utf-8",{fatal:!0,ignoreBOM:!0}).decode(n)}catch{return}}var m=class extends Error{constructor(t,r){super(r);this.code=t}code;name="TlogError"};var nn=1,mt="\u2014 ",rn=100;function bt(n){return n!==""&&xe(n)&&!/\p{White_Space}/u.test(n)&&!n.includes("+")}async function on(n,e,t){let r=await n.sha256(q(e),new Uint8Array([10]),t);return((r[0]??0)<<24|(r[1]??0)<<16|(r[2]??0)<<8|(r[3]??0))>>>0}function sn(n){return n.toString(16).padStart(8,"0")}function Ae(n,e){let t=n.indexOf(e);return t<0?[n,""]:[n.slice(0,t),n.slice(t+e.length)]}function an(n){return/^[0-9a-fA-F]{8}$/.test(n)?Number.parseInt(n,16):void 0}async function wt(n,e){let[t,r]=Ae(e,"+"),[i,o]=Ae(r,"+"),s=an(i),c=v(o);if(s===void 0||c===void 0||!bt(t)||c.length===0)throw new m("malformed","malformed verifier id");if(s!==await on(n,t,c))throw new m("malformed","invalid verifier hash");if(c[0]!==nn)throw new m("malformed","unknown verifier algorithm");if(c.length!==33)throw new m("malformed","malformed verifier id");return{name:t,keyId:s,publicKey:c.slice(1),encoded:e}}function cn(n){let e=n.lastIndexOf(`

`);if(e<0)return;let t=n.slice(e+2);if(!(t.length===0||!t.endsWith(`
`)))return{text:n.slice(0,e+1),sigs:t}}function dn(n){return((n[0]??0)<<24|(n[1]??0)<<16|(n[2]??0)<<8|(n[3]??0))>>>0}async function vt(n,e,t){let r="publicKey"in t?[t]:t,i=()=>new m("malformed","malformed note"),o=typeof e=="string"?e:gt(e);if(o===void 0||!xe(o)||/[\u0000-\u0009\u000b-\u001f]/.test(o))throw i();let s=cn(o);if(s===void 0)throw i();let{text:c}=s,{sigs:a}=s,d=[],f=[],l=new Set,h=0;for(;a.length>0;){let u=a.indexOf(`
`),p=a.slice(0,u);if(a=a.slice(u+1),!p.startsWith(mt))throw i();p=p.slice(mt.length);let[y,k]=Ae(p," "),_=v(k);if(_===void 0||!bt(y)||k===""||_.length<5)throw i();let M=dn(_);if(++h>rn)throw i();let Ne=r.find(D=>D.name===y&&D.keyId===M);if(Ne===void 0){l.has(p)||(l.add(p),f.push({name:y,keyId:M,base64:k}));continue}if(!d.some(D=>D.name===y&&D.keyId===M)){if(!await n.ed25519Verify(Ne.publicKey,q(c),_.subarray(4)))throw new m("bad-signature",`invalid signature for key ${y}+${sn(M)}`);d.push({name:y,keyId:M,base64:k})}}if(d.length===0)throw new m("unverified","note has no verifiable signatures");return{text:c,sigs:d,unverifiedSigs:f}}var z=32,ln=new Uint8Array([0]),fn=new Uint8Array([1]);function un(n){let e=0;for(;2**(e+1)<n;)e++;return{k:2**e,l:e}}async function Ee(n,e){return n.sha256(ln,e)}async function $t(n,e,t){return n.sha256(fn,e,t)}async function xt(n,e,t,r,i,o){if(!Number.isSafeInteger(t)||!Number.isSafeInteger(i)||t<0||i<0||i>=t)throw new m("invalid-input","tlog: invalid inputs in checkRecord");let s=await Se(n,e,0,t,i,o);if(!R(s,r))throw ke()}function ke(){return new m("proof-failed","invalid transparency proof")}async function Se(n,e,t,r,i,o){if(!(t<=i&&i<r))throw new Error("tlog: bad math in runRecordProof");if(t+1===r){if(e.length!==0)throw ke();return o}if(e.length===0)throw ke();let s=e[e.length-1],c=e.slice(0,-1),{k:a}=un(r-t);return i<t+a?$t(n,await Se(n,c,t,t+a,i,o),s):$t(n,s,await Se(n,c,t+a,r,i,o))}function hn(n){let e=d=>new m("malformed",`malformed checkpoint: ${d}`);if(!n.endsWith(`
`))throw e("text does not end in a newline");let t=n.slice(0,-1).split(`
`),[r,i,o,...s]=t;if(r===void 0||r==="")throw e("no origin line");if(i===void 0||!/^(0|[1-9][0-9]*)$/.test(i))throw e("tree size is not a decimal number");let c=Number(i);if(!Number.isSafeInteger(c))throw e("tree size too large");let a=o===void 0?void 0:v(o);if(a===void 0||a.length!==z)throw e("root hash is not 32 bytes of base64");if(s.some(d=>d===""))throw e("empty extension line");return{origin:r,size:c,rootHash:a}}async function _e(n,e,t,r){let i=await vt(n,e,t),o=hn(i.text);if(!i.sigs.some(s=>s.name===o.origin)){let s=[...new Set(i.sigs.map(c=>c.name))];throw new m("invalid-input",`checkpoint is for log ${JSON.stringify(o.origin)}, not for the key's log ${s.map(c=>JSON.stringify(c)).join(", ")}`)}if(r!==void 0&&o.origin!==r)throw new m("invalid-input",`checkpoint is for log ${JSON.stringify(o.origin)}, not ${JSON.stringify(r)}`);return{...o,note:typeof e=="string"?e:new TextDecoder().decode(e),signatures:i.sigs}}var At=new Uint8Array([48,46,2,1,0,48,5,6,3,43,101,112,4,34,4,32]);function pn(n){let e=n.replaceAll("-","+").replaceAll("_","/"),t=atob(e+"=".repeat((4-e.length%4)%4)),r=new Uint8Array(t.length);for(let i=0;i<t.length;i++)r[i]=t.charCodeAt(i);return r}function Ie(n=globalThis.crypto?.subtle){if(n===void 0)throw new Error("WebCrypto (crypto.subtle) is not available here");let e={name:"Ed25519"};return{async sha256(...t){return new Uint8Array(await n.digest("SHA-256",W(...t)))},async ed25519PublicKey(t){let r=await n.importKey("pkcs8",W(At,t),e,!0,["sign"]),i=await n.exportKey("jwk",r);if(i.x===void 0)throw new Error("WebCrypto returned no Ed25519 public key");return pn(i.x)},async ed25519Sign(t,r){let i=await n.importKey("pkcs8",W(At,t),e,!1,["sign"]);return new Uint8Array(await n.sign(e,i,r))},async ed25519Verify(t,r,i){if(t.length!==32||i.length!==64)return!1;let o=await n.importKey("raw",t,e,!1,["verify"]);return n.verify(e,o,i,r)}}}function gn(n){return Ce(n,void 0,"$")}function kt(n){return q(gn(n))}function mn(n,e){let t=[e];for(let r=n;r;r=r.parent)t.unshift(r.step);return t.map((r,i)=>i===0?String(r):typeof r=="number"?`[${r}]`:`.${r}`).join("")}function Pe(n,e,t){throw new m("malformed",`cannot canonicalize ${mn(n,e)}: ${t}`)}function Ce(n,e,t){switch(typeof n){case"string":return JSON.stringify(n);case"number":return Number.isFinite(n)||Pe(e,t,`${n} is not a JSON number`),String(n);case"boolean":return n?"true":"false";case"object":break;default:Pe(e,t,`${typeof n} is not a JSON value`)}if(n===null)return"null";let r={parent:e,step:t};if(Array.isArray(n)){let a="[";for(let d=0;d<n.length;d++)d>0&&(a+=","),a+=Ce(n[d],r,d);return`${a}]`}let i=Object.getPrototypeOf(n);i!==Object.prototype&&i!==null&&Pe(e,t,"not a plain JSON object");let o=n,s=Object.keys(o).sort(),c="{";for(let a=0;a<s.length;a++){let d=s[a];a>0&&(c+=","),c+=`${JSON.stringify(d)}:${Ce(o[d],r,d)}`}return`${c}}`}var Te=1,He=65,ce=32,yn=["eventId","receivedAt","occurredAt","actionKey","action","actionDescription","entityType","entityId","actorType","actorId","actorDisplay","tenantId","source","context","changes"],St=/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;function w(n){return new m("malformed",n)}function bn(n){let e={};for(let t of yn)Object.hasOwn(n,t)&&n[t]!==void 0&&(e[t]=n[t]);return e}async function wn(n,e,t){if(e.length!==ce)throw w(`a salt is ${ce} bytes`);return n.sha256(e,kt(bn(t)))}function Et(n){let e=Date.parse(n);if(Number.isNaN(e)||new Date(e).toISOString()!==n)throw w(`receivedAt ${JSON.stringify(n)} is not a UTC date-time with milliseconds`);return e}function vn(n){let{logIndex:e,receivedAtMs:t,eventId:r,commitment:i}=n;if(!Number.isSafeInteger(e)||e<0)throw w("bad logIndex");if(!Number.isSafeInteger(t))throw w("bad receivedAt");if(!St.test(r))throw w(`eventId ${JSON.stringify(r)} is not a UUID`);if(i.length!==z)throw w("a commitment is 32 bytes");let o=new Uint8Array(He),s=new DataView(o.buffer);o[0]=Te,s.setBigUint64(1,BigInt(e)),s.setBigInt64(9,BigInt(t));let c=r.replaceAll("-","");for(let a=0;a<16;a++)o[17+a]=Number.parseInt(c.slice(2*a,2*a+2),16);return o.set(i,33),o}function Ue(n){if(n.length!==He||n[0]!==Te)throw w(`not a version-${Te} leaf of ${He} bytes`);let e=new DataView(n.buffer,n.byteOffset,n.byteLength),t=e.getBigUint64(1),r=e.getBigInt64(9);if(t>BigInt(Number.MAX_SAFE_INTEGER))throw w("logIndex out of range");let i=pt(n.subarray(17,33));return{logIndex:Number(t),receivedAtMs:Number(r),eventId:`${i.slice(0,8)}-${i.slice(8,12)}-${i.slice(12,16)}-${i.slice(16,20)}-${i.slice(20)}`,commitment:n.slice(33,65)}}async function _t(n,e){let{eventId:t,receivedAt:r,logIndex:i,salt:o}=e;if(typeof t!="string"||!St.test(t))throw w("no valid eventId");if(typeof r!="string")throw w("no receivedAt");if(typeof i!="number"||!Number.isSafeInteger(i)||i<0)throw w("no logIndex");let s=typeof o=="string"?v(o):void 0;if(s===void 0||s.length!==ce)throw w(`no salt of ${ce} bytes in base64`);let c=await wn(n,s,e),a=vn({logIndex:i,receivedAtMs:Et(r),eventId:t,commitment:c});return{eventId:t,logIndex:i,leaf:a}}function It(n,e){if(R(n,e))return;let t;try{t=Ue(e)}catch{return"the service's leaf is not a valid leaf"}let r=Ue(n),i=[];return r.logIndex!==t.logIndex&&i.push(`logIndex ${t.logIndex}`),r.eventId!==t.eventId&&i.push(`eventId ${t.eventId}`),r.receivedAtMs!==t.receivedAtMs&&i.push(`receivedAt ${new Date(t.receivedAtMs).toISOString()}`),R(r.commitment,t.commitment)||i.push("a commitment to other content"),`the service's leaf has ${i.join(", ")}`}function Pt(n){return n instanceof Error?n.message:String(n)}function $n(n){return n.map(e=>{let t=v(e);if(t===void 0||t.length!==z)throw new m("malformed","a proof hash is not 32 bytes of base64");return t})}async function Ct(n,e,t,r){let i,o;try{({leaf:i,logIndex:o}=await _t(n,e))}catch(f){return`cannot recompute its leaf: ${Pt(f)}`}let s=Number(t.logIndex),c=Number(t.treeSize);if(s!==o)return`the service places it at logIndex ${t.logIndex}, the event says ${o}`;if(c!==r.size)return`the proof is for tree size ${t.treeSize}, not the checkpoint's ${r.size}`;let a=v(t.leaf);if(a===void 0)return"the service's leaf is not base64";let d=It(i,a);if(d!==void 0)return`its content or metadata changed since it was logged: ${d}`;try{await xt(n,$n(t.hashes),r.size,r.rootHash,o,await Ee(n,i))}catch(f){return f instanceof m&&f.code==="proof-failed"?"its inclusion proof does not lead to the checkpoint's root (the event or the tree was changed)":`its inclusion proof is unusable: ${Pt(f)}`}}async function Tt(n,e){let t=e.split(/\s+/).filter(o=>o!=="");if(t.length===0)throw new m("malformed","no verifier key given");let r=await Promise.all(t.map(o=>wt(n,o))),i=new Set(r.map(o=>o.name));if(i.size>1)throw new m("malformed",`the verifier keys name different logs: ${[...i].join(", ")}`);return r}function Rt(n){let e,t,r=async s=>fetch(new URL(s,n.baseUrl),{headers:{authorization:`Bearer ${await n.token()}`}}),i=async s=>{let c=await r(s),a=await c.text();if(!c.ok)throw new Error(Ut(a,c.status));return a},o=async()=>{e??=Ie();let s=n.verifierKey.trim()||(await i("api/log/key")).trim();return _e(e,await i("api/log/checkpoint"),await Tt(e,s))};return{async verify(s){let c;try{if(t??=o(),c=await t,typeof s.logIndex=="number"&&s.logIndex>=c.size&&(t=o(),c=await t,s.logIndex>=c.size))return{state:"pending",reason:"not yet in a signed checkpoint"}}catch(a){return t=void 0,{state:"failed",reason:`checkpoint: ${Ht(a)}`}}try{let a=String(s.eventId),d=await r(`api/log/proof/inclusion?eventId=${encodeURIComponent(a)}&treeSize=${c.size}`),f=await d.text();if(!d.ok)return{state:"failed",reason:Ut(f,d.status)};let l=await Ct(e??Ie(),s,JSON.parse(f),c);return l===void 0?{state:"verified",treeSize:c.size}:{state:"failed",reason:l}}catch(a){return{state:"failed",reason:Ht(a)}}}}}function Ht(n){return n instanceof Error?n.message:String(n)}function Ut(n,e){try{let t=JSON.parse(n);if(typeof t.error=="string")return t.error}catch{}return`HTTP ${e}`}var O=class extends Error{name="TokenProviderError"},xn=15e3,An=1e3;function kn(n){let e=n.split(".")[1];if(e===void 0)return{};try{let t=e.replace(/-/g,"+").replace(/_/g,"/"),r=JSON.parse(atob(t.padEnd(Math.ceil(t.length/4)*4,"=")));if(typeof r!="object"||r===null)return{};let{iat:i,exp:o}=r;return{...typeof i=="number"?{issuedAt:i}:{},...typeof o=="number"?{expiresAt:o}:{}}}catch{return{}}}function Nt(n){let e=()=>Date.now(),t,r,i,o,s,c=()=>{if(s!==void 0&&clearTimeout(s),s=void 0,i===void 0)return;let f=Math.max(An,i-e());s=setTimeout(()=>{d().catch(()=>{})},f)},a=(f,l)=>{if(f===t){s!==void 0&&clearTimeout(s),s=void 0;return}t=f;let{issuedAt:h,expiresAt:u}=kn(f);if(u===void 0)r=void 0,i=void 0;else{let p=h!==void 0&&u>h?(u-h)*1e3:u*1e3-l,y=Math.min(xn,Math.max(0,p)/2);r=l+p,i=r-y}c()},d=()=>(o??=(async()=>{let f;try{f=await n()}catch(l){throw new O(l instanceof Error?l.message:String(l))}if(typeof f!="string"||f.trim().length===0)throw new O("the token provider returned no token");return a(f.trim(),e()),f.trim()})().finally(()=>{o=void 0}),o);return{async get(){if(o)return o;if(t!==void 0&&(i===void 0||e()<i))return t;let f=t;try{return await d()}catch(l){let h=r===void 0||e()<r;if(f!==void 0&&h)return f;throw l}},refresh:d,stop(){s!==void 0&&clearTimeout(s),s=void 0}}}var Lt=50,Sn=200,En=["q","actorId","entityType","entityId","action","tenantId"],_n=1e3,In=3e4,Re=class extends S{static properties={baseUrl:{attribute:"base-url"},pageSize:{attribute:"page-size",type:Number},tokenProvider:{attribute:!1},events:{state:!0},nextCursor:{state:!0},loading:{state:!0},error:{state:!0},open:{state:!0},verifyProofs:{attribute:"verify",type:Boolean},verifierKey:{attribute:"verifier-key"},verification:{state:!0}};verifier;filters={};tokens;generation=0;inFlight;observer;observed;constructor(){super(),this.baseUrl="",this.pageSize=Lt,this.tokenProvider=void 0,this.events=[],this.nextCursor=null,this.loading=!1,this.error=void 0,this.open=new Set,this.verifyProofs=!1,this.verifierKey="",this.verification=new Map}connectedCallback(){super.connectedCallback(),this.observer=new IntersectionObserver(e=>{e.some(t=>t.isIntersecting)&&this.loadMore()}),this.tokens&&this.hasUpdated&&this.events.length===0&&this.reload(),this.requestUpdate()}disconnectedCallback(){super.disconnectedCallback(),this.observer?.disconnect(),this.observer=void 0,this.observed=void 0,this.tokens?.stop(),this.inFlight?.abort(),this.loading=!1}willUpdate(e){e.has("tokenProvider")?(this.tokens?.stop(),this.tokens=this.tokenProvider?Nt(this.tokenProvider):void 0,this.reload()):(e.has("baseUrl")||e.has("pageSize"))&&this.hasUpdated&&this.reload()}updated(){let e=this.renderRoot.querySelector(".more")??void 0;this.observer&&(this.observed&&this.observer.unobserve(this.observed),this.observed=e,e&&!this.loading&&this.observer.observe(e))}reload(){this.generation++,this.inFlight?.abort(),this.inFlight=void 0,this.events=[],this.nextCursor=null,this.open=new Set,this.verification=new Map,this.verifier=void 0,this.error=void 0,this.loading=!1,this.tokens&&this.fetchPage(void 0)}loadMore=()=>{this.loading||this.error!==void 0||this.nextCursor===null||this.fetchPage(this.nextCursor)};async fetchPage(e){let t=this.tokens;if(!t)return;let r=this.generation,i=new AbortController;this.inFlight=i,this.loading=!0,this.error=void 0;try{let o=d=>dt({baseUrl:this.serviceUrl(),token:d,filters:this.filters,limit:this.limit(),...e===void 0?{}:{cursor:e},signal:i.signal}),s;try{s=await o(await t.get())}catch(d){if(!(d instanceof U&&d.status===401)||d.message!=="Token expired")throw d;s=await o(await t.refresh())}if(r!==this.generation)return;let c=new Set(this.events.map(d=>d.eventId)),a=s.events.filter(d=>!c.has(d.eventId));this.events=[...this.events,...a.map(Pn)],this.verifyProofs&&this.verifyEvents(a,r,t),this.nextCursor=s.nextCursor}catch(o){if(r!==this.generation||i.signal.aborted)return;this.error=Cn(o)}finally{r===this.generation&&(this.loading=!1,this.inFlight=void 0)}}verifyEvents(e,t,r,i=0){this.verifier??=Rt({baseUrl:this.serviceUrl(),token:()=>r.get(),verifierKey:this.verifierKey??""});let o=this.verifier;(async()=>{let s=[];for(let c of e){let a=await o.verify(c);if(t!==this.generation)return;this.verification=new Map(this.verification).set(c.eventId,a),a.state==="pending"&&s.push(c)}s.length!==0&&setTimeout(()=>{t!==this.generation||!this.isConnected||this.verifyEvents(s,t,r,i+1)},Math.min(_n*2**i,In))})()}renderProof(e){if(!this.verifyProofs)return g;let t=this.verification.get(e);return t===void 0?b`<span class="proof checking">checking…</span>`:t.state==="verified"?b`<span
        class="proof verified"
        title=${`In the signed log (checkpoint of ${t.treeSize} events), unchanged: checked in this browser`}
        >✓ verified</span
      >`:b`<span class="proof ${t.state}" title=${t.reason}
      >${t.state==="pending"?"\u2026 pending":"\u2717 not verified"}</span
    >`}serviceUrl(){let e=this.baseUrl.trim()||window.location.origin;return e.endsWith("/")?e:`${e}/`}limit(){let e=Math.trunc(Number(this.pageSize));return Number.isFinite(e)&&e>=1?Math.min(e,Sn):Lt}onSubmit=e=>{e.preventDefault();let t=e.currentTarget,r=new FormData(t),i={};for(let c of En){let a=String(r.get(c)??"").trim();a.length>0&&(i[c]=a)}let o=$e(String(r.get("from")??""),!1),s=$e(String(r.get("to")??""),!0);o&&(i.from=o),s&&(i.to=s),this.filters=i,this.reload()};onReset=()=>{this.filters={},this.reload()};toggle(e){let t=new Set(this.open);t.delete(e)||t.add(e),this.open=t}onRowKey=e=>{let t=[...this.renderRoot.querySelectorAll("button.summary")],r=t.indexOf(e.currentTarget),i=e.key==="ArrowDown"?t[r+1]:e.key==="ArrowUp"?t[r-1]:e.key==="Home"?t[0]:e.key==="End"?t.at(-1):void 0;i&&(e.preventDefault(),i.focus())};retry=()=>{this.events.length===0?this.reload():(this.error=void 0,this.loadMore())};render(){return b`
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
    `}statusText(){if(!this.tokens)return"Waiting for a frontend token.";let e=this.events.length;if(e===0)return this.loading?"Loading events\u2026":this.error===void 0?"No events match these filters.":"";let t=`${e} ${e===1?"event":"events"}`;return this.loading?`Showing ${t}; loading more\u2026`:this.nextCursor===null?`Showing all ${t}, newest first.`:`Showing ${t}, newest first; scroll for more.`}renderRow(e,t){let r=this.open.has(e.eventId),i=`details-${t}`;return b`<li class="row">
      <button
        type="button"
        class="summary"
        aria-expanded=${r?"true":"false"}
        aria-controls=${r?i:g}
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
      ${r?this.renderDetails(e,i):g}
    </li>`}renderDetails(e,t){let r=(i,o)=>o===void 0?g:b`<dt>${i}</dt><dd>${o}</dd>`;return b`<section class="details" id=${t} aria-label="Event details">
      <dl>
        ${r("Event id",e.eventId)}
        ${r("Occurred",e.occurredAt)}
        ${r("Received",e.receivedAt)}
        ${r("Action",zt(e))}
        ${r("Description",e.actionDescription)}
        ${r("Actor",`${e.actorDisplay??e.actorId} (${e.actorType} ${e.actorId})`)}
        ${r("Entity",`${e.entityType} ${e.entityId}`)}
        ${r("Tenant",e.tenantId)}
        ${r("Source",e.source)}
      </dl>
      <h3>Changes</h3>
      ${e.changes===void 0||e.changes.length===0?b`<p class="none">No changes recorded.</p>`:b`<table class="diff">
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
  `};function zt(n){return n.actionKey??n.action??""}function Pn(n){return se(n)}function Cn(n){return n instanceof U?n.status===401?`Not authorized: ${n.message}. The page needs a new frontend token.`:n.status===400?`The service refused these filters: ${n.message}`:`The audit service answered ${n.status}: ${n.message}`:n instanceof O?`Could not get a token: ${n.message}`:`Could not reach the audit service: ${n instanceof Error?n.message:String(n)}`}customElements.get("audit-log-viewer")||customElements.define("audit-log-viewer",Re);export{Re as AuditLogViewer};
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
