var X=globalThis,Z=X.ShadowRoot&&(X.ShadyCSS===void 0||X.ShadyCSS.nativeShadow)&&"adoptedStyleSheets"in Document.prototype&&"replace"in CSSStyleSheet.prototype,le=Symbol(),Me=new WeakMap,B=class{constructor(e,n,r){if(this._$cssResult$=!0,r!==le)throw Error("CSSResult is not constructable. Use `unsafeCSS` or `css` instead.");this.cssText=e,this.t=n}get styleSheet(){let e=this.o,n=this.t;if(Z&&e===void 0){let r=n!==void 0&&n.length===1;r&&(e=Me.get(n)),e===void 0&&((this.o=e=new CSSStyleSheet).replaceSync(this.cssText),r&&Me.set(n,e))}return e}toString(){return this.cssText}},De=t=>new B(typeof t=="string"?t:t+"",void 0,le),fe=(t,...e)=>{let n=t.length===1?t[0]:e.reduce((r,i,o)=>r+(s=>{if(s._$cssResult$===!0)return s.cssText;if(typeof s=="number")return s;throw Error("Value passed to 'css' function must be a 'css' function result: "+s+". Use 'unsafeCSS' to pass non-literal values, but take care to ensure page security.")})(i)+t[o+1],t[0]);return new B(n,t,le)},je=(t,e)=>{if(Z)t.adoptedStyleSheets=e.map(n=>n instanceof CSSStyleSheet?n:n.styleSheet);else for(let n of e){let r=document.createElement("style"),i=X.litNonce;i!==void 0&&r.setAttribute("nonce",i),r.textContent=n.cssText,t.appendChild(r)}},ue=Z?t=>t:t=>t instanceof CSSStyleSheet?(e=>{let n="";for(let r of e.cssRules)n+=r.cssText;return De(n)})(t):t;var{is:Bt,defineProperty:Vt,getOwnPropertyDescriptor:Ft,getOwnPropertyNames:Kt,getOwnPropertySymbols:Jt,getPrototypeOf:Wt}=Object,Y=globalThis,Be=Y.trustedTypes,qt=Be?Be.emptyScript:"",Gt=Y.reactiveElementPolyfillSupport,V=(t,e)=>t,he={toAttribute(t,e){switch(e){case Boolean:t=t?qt:null;break;case Object:case Array:t=t==null?t:JSON.stringify(t)}return t},fromAttribute(t,e){let n=t;switch(e){case Boolean:n=t!==null;break;case Number:n=t===null?null:Number(t);break;case Object:case Array:try{n=JSON.parse(t)}catch{n=null}}return n}},Fe=(t,e)=>!Bt(t,e),Ve={attribute:!0,type:String,converter:he,reflect:!1,useDefault:!1,hasChanged:Fe};Symbol.metadata??=Symbol("metadata"),Y.litPropertyMetadata??=new WeakMap;var $=class extends HTMLElement{static addInitializer(e){this._$Ei(),(this.l??=[]).push(e)}static get observedAttributes(){return this.finalize(),this._$Eh&&[...this._$Eh.keys()]}static createProperty(e,n=Ve){if(n.state&&(n.attribute=!1),this._$Ei(),this.prototype.hasOwnProperty(e)&&((n=Object.create(n)).wrapped=!0),this.elementProperties.set(e,n),!n.noAccessor){let r=Symbol(),i=this.getPropertyDescriptor(e,r,n);i!==void 0&&Vt(this.prototype,e,i)}}static getPropertyDescriptor(e,n,r){let{get:i,set:o}=Ft(this.prototype,e)??{get(){return this[n]},set(s){this[n]=s}};return{get:i,set(s){let c=i?.call(this);o?.call(this,s),this.requestUpdate(e,c,r)},configurable:!0,enumerable:!0}}static getPropertyOptions(e){return this.elementProperties.get(e)??Ve}static _$Ei(){if(this.hasOwnProperty(V("elementProperties")))return;let e=Wt(this);e.finalize(),e.l!==void 0&&(this.l=[...e.l]),this.elementProperties=new Map(e.elementProperties)}static finalize(){if(this.hasOwnProperty(V("finalized")))return;if(this.finalized=!0,this._$Ei(),this.hasOwnProperty(V("properties"))){let n=this.properties,r=[...Kt(n),...Jt(n)];for(let i of r)this.createProperty(i,n[i])}let e=this[Symbol.metadata];if(e!==null){let n=litPropertyMetadata.get(e);if(n!==void 0)for(let[r,i]of n)this.elementProperties.set(r,i)}this._$Eh=new Map;for(let[n,r]of this.elementProperties){let i=this._$Eu(n,r);i!==void 0&&this._$Eh.set(i,n)}this.elementStyles=this.finalizeStyles(this.styles)}static finalizeStyles(e){let n=[];if(Array.isArray(e)){let r=new Set(e.flat(1/0).reverse());for(let i of r)n.unshift(ue(i))}else e!==void 0&&n.push(ue(e));return n}static _$Eu(e,n){let r=n.attribute;return r===!1?void 0:typeof r=="string"?r:typeof e=="string"?e.toLowerCase():void 0}constructor(){super(),this._$Ep=void 0,this.isUpdatePending=!1,this.hasUpdated=!1,this._$Em=null,this._$Ev()}_$Ev(){this._$ES=new Promise(e=>this.enableUpdating=e),this._$AL=new Map,this._$E_(),this.requestUpdate(),this.constructor.l?.forEach(e=>e(this))}addController(e){(this._$EO??=new Set).add(e),this.renderRoot!==void 0&&this.isConnected&&e.hostConnected?.()}removeController(e){this._$EO?.delete(e)}_$E_(){let e=new Map,n=this.constructor.elementProperties;for(let r of n.keys())this.hasOwnProperty(r)&&(e.set(r,this[r]),delete this[r]);e.size>0&&(this._$Ep=e)}createRenderRoot(){let e=this.shadowRoot??this.attachShadow(this.constructor.shadowRootOptions);return je(e,this.constructor.elementStyles),e}connectedCallback(){this.renderRoot??=this.createRenderRoot(),this.enableUpdating(!0),this._$EO?.forEach(e=>e.hostConnected?.())}enableUpdating(e){}disconnectedCallback(){this._$EO?.forEach(e=>e.hostDisconnected?.())}attributeChangedCallback(e,n,r){this._$AK(e,r)}_$ET(e,n){let r=this.constructor.elementProperties.get(e),i=this.constructor._$Eu(e,r);if(i!==void 0&&r.reflect===!0){let o=(r.converter?.toAttribute!==void 0?r.converter:he).toAttribute(n,r.type);this._$Em=e,o==null?this.removeAttribute(i):this.setAttribute(i,o),this._$Em=null}}_$AK(e,n){let r=this.constructor,i=r._$Eh.get(e);if(i!==void 0&&this._$Em!==i){let o=r.getPropertyOptions(i),s=typeof o.converter=="function"?{fromAttribute:o.converter}:o.converter?.fromAttribute!==void 0?o.converter:he;this._$Em=i;let c=s.fromAttribute(n,o.type);this[i]=c??this._$Ej?.get(i)??c,this._$Em=null}}requestUpdate(e,n,r,i=!1,o){if(e!==void 0){let s=this.constructor;if(i===!1&&(o=this[e]),r??=s.getPropertyOptions(e),!((r.hasChanged??Fe)(o,n)||r.useDefault&&r.reflect&&o===this._$Ej?.get(e)&&!this.hasAttribute(s._$Eu(e,r))))return;this.C(e,n,r)}this.isUpdatePending===!1&&(this._$ES=this._$EP())}C(e,n,{useDefault:r,reflect:i,wrapped:o},s){r&&!(this._$Ej??=new Map).has(e)&&(this._$Ej.set(e,s??n??this[e]),o!==!0||s!==void 0)||(this._$AL.has(e)||(this.hasUpdated||r||(n=void 0),this._$AL.set(e,n)),i===!0&&this._$Em!==e&&(this._$Eq??=new Set).add(e))}async _$EP(){this.isUpdatePending=!0;try{await this._$ES}catch(n){Promise.reject(n)}let e=this.scheduleUpdate();return e!=null&&await e,!this.isUpdatePending}scheduleUpdate(){return this.performUpdate()}performUpdate(){if(!this.isUpdatePending)return;if(!this.hasUpdated){if(this.renderRoot??=this.createRenderRoot(),this._$Ep){for(let[i,o]of this._$Ep)this[i]=o;this._$Ep=void 0}let r=this.constructor.elementProperties;if(r.size>0)for(let[i,o]of r){let{wrapped:s}=o,c=this[i];s!==!0||this._$AL.has(i)||c===void 0||this.C(i,void 0,o,c)}}let e=!1,n=this._$AL;try{e=this.shouldUpdate(n),e?(this.willUpdate(n),this._$EO?.forEach(r=>r.hostUpdate?.()),this.update(n)):this._$EM()}catch(r){throw e=!1,this._$EM(),r}e&&this._$AE(n)}willUpdate(e){}_$AE(e){this._$EO?.forEach(n=>n.hostUpdated?.()),this.hasUpdated||(this.hasUpdated=!0,this.firstUpdated(e)),this.updated(e)}_$EM(){this._$AL=new Map,this.isUpdatePending=!1}get updateComplete(){return this.getUpdateComplete()}getUpdateComplete(){return this._$ES}shouldUpdate(e){return!0}update(e){this._$Eq&&=this._$Eq.forEach(n=>this._$ET(n,this[n])),this._$EM()}updated(e){}firstUpdated(e){}};$.elementStyles=[],$.shadowRootOptions={mode:"open"},$[V("elementProperties")]=new Map,$[V("finalized")]=new Map,Gt?.({ReactiveElement:$}),(Y.reactiveElementVersions??=[]).push("2.1.2");var ge=globalThis,Ke=t=>t,Q=ge.trustedTypes,Je=Q?Q.createPolicy("lit-html",{createHTML:t=>t}):void 0,me="$lit$",x=`lit$${Math.random().toFixed(9).slice(2)}$`,ye="?"+x,Xt=`<${ye}>`,T=document,K=()=>T.createComment(""),J=t=>t===null||typeof t!="object"&&typeof t!="function",be=Array.isArray,Ye=t=>be(t)||typeof t?.[Symbol.iterator]=="function",pe=`[ 	
\f\r]`,F=/<(?:(!--|\/[^a-zA-Z])|(\/?[a-zA-Z][^>\s]*)|(\/?$))/g,We=/-->/g,qe=/>/g,P=RegExp(`>|${pe}(?:([^\\s"'>=/]+)(${pe}*=${pe}*(?:[^ 	
\f\r"'\`<>=]|("|')|))|$)`,"g"),Ge=/'/g,Xe=/"/g,Qe=/^(?:script|style|textarea|title)$/i,we=t=>(e,...n)=>({_$litType$:t,strings:e,values:n}),b=we(1),Dn=we(2),jn=we(3),A=Symbol.for("lit-noChange"),g=Symbol.for("lit-nothing"),Ze=new WeakMap,C=T.createTreeWalker(T,129);function et(t,e){if(!be(t)||!t.hasOwnProperty("raw"))throw Error("invalid template strings array");return Je!==void 0?Je.createHTML(e):e}var tt=(t,e)=>{let n=t.length-1,r=[],i,o=e===2?"<svg>":e===3?"<math>":"",s=F;for(let c=0;c<n;c++){let a=t[c],d,f,l=-1,h=0;for(;h<a.length&&(s.lastIndex=h,f=s.exec(a),f!==null);)h=s.lastIndex,s===F?f[1]==="!--"?s=We:f[1]!==void 0?s=qe:f[2]!==void 0?(Qe.test(f[2])&&(i=RegExp("</"+f[2],"g")),s=P):f[3]!==void 0&&(s=P):s===P?f[0]===">"?(s=i??F,l=-1):f[1]===void 0?l=-2:(l=s.lastIndex-f[2].length,d=f[1],s=f[3]===void 0?P:f[3]==='"'?Xe:Ge):s===Xe||s===Ge?s=P:s===We||s===qe?s=F:(s=P,i=void 0);let u=s===P&&t[c+1].startsWith("/>")?" ":"";o+=s===F?a+Xt:l>=0?(r.push(d),a.slice(0,l)+me+a.slice(l)+x+u):a+x+(l===-2?c:u)}return[et(t,o+(t[n]||"<?>")+(e===2?"</svg>":e===3?"</math>":"")),r]},W=class t{constructor({strings:e,_$litType$:n},r){let i;this.parts=[];let o=0,s=0,c=e.length-1,a=this.parts,[d,f]=tt(e,n);if(this.el=t.createElement(d,r),C.currentNode=this.el.content,n===2||n===3){let l=this.el.content.firstChild;l.replaceWith(...l.childNodes)}for(;(i=C.nextNode())!==null&&a.length<c;){if(i.nodeType===1){if(i.hasAttributes())for(let l of i.getAttributeNames())if(l.endsWith(me)){let h=f[s++],u=i.getAttribute(l).split(x),p=/([.?@])?(.*)/.exec(h);a.push({type:1,index:o,name:p[2],strings:u,ctor:p[1]==="."?te:p[1]==="?"?ne:p[1]==="@"?re:R}),i.removeAttribute(l)}else l.startsWith(x)&&(a.push({type:6,index:o}),i.removeAttribute(l));if(Qe.test(i.tagName)){let l=i.textContent.split(x),h=l.length-1;if(h>0){i.textContent=Q?Q.emptyScript:"";for(let u=0;u<h;u++)i.append(l[u],K()),C.nextNode(),a.push({type:2,index:++o});i.append(l[h],K())}}}else if(i.nodeType===8)if(i.data===ye)a.push({type:2,index:o});else{let l=-1;for(;(l=i.data.indexOf(x,l+1))!==-1;)a.push({type:7,index:o}),l+=x.length-1}o++}}static createElement(e,n){let r=T.createElement("template");return r.innerHTML=e,r}};function H(t,e,n=t,r){if(e===A)return e;let i=r!==void 0?n._$Co?.[r]:n._$Cl,o=J(e)?void 0:e._$litDirective$;return i?.constructor!==o&&(i?._$AO?.(!1),o===void 0?i=void 0:(i=new o(t),i._$AT(t,n,r)),r!==void 0?(n._$Co??=[])[r]=i:n._$Cl=i),i!==void 0&&(e=H(t,i._$AS(t,e.values),i,r)),e}var ee=class{constructor(e,n){this._$AV=[],this._$AN=void 0,this._$AD=e,this._$AM=n}get parentNode(){return this._$AM.parentNode}get _$AU(){return this._$AM._$AU}u(e){let{el:{content:n},parts:r}=this._$AD,i=(e?.creationScope??T).importNode(n,!0);C.currentNode=i;let o=C.nextNode(),s=0,c=0,a=r[0];for(;a!==void 0;){if(s===a.index){let d;a.type===2?d=new L(o,o.nextSibling,this,e):a.type===1?d=new a.ctor(o,a.name,a.strings,this,e):a.type===6&&(d=new ie(o,this,e)),this._$AV.push(d),a=r[++c]}s!==a?.index&&(o=C.nextNode(),s++)}return C.currentNode=T,i}p(e){let n=0;for(let r of this._$AV)r!==void 0&&(r.strings!==void 0?(r._$AI(e,r,n),n+=r.strings.length-2):r._$AI(e[n])),n++}},L=class t{get _$AU(){return this._$AM?._$AU??this._$Cv}constructor(e,n,r,i){this.type=2,this._$AH=g,this._$AN=void 0,this._$AA=e,this._$AB=n,this._$AM=r,this.options=i,this._$Cv=i?.isConnected??!0}get parentNode(){let e=this._$AA.parentNode,n=this._$AM;return n!==void 0&&e?.nodeType===11&&(e=n.parentNode),e}get startNode(){return this._$AA}get endNode(){return this._$AB}_$AI(e,n=this){e=H(this,e,n),J(e)?e===g||e==null||e===""?(this._$AH!==g&&this._$AR(),this._$AH=g):e!==this._$AH&&e!==A&&this._(e):e._$litType$!==void 0?this.$(e):e.nodeType!==void 0?this.T(e):Ye(e)?this.k(e):this._(e)}O(e){return this._$AA.parentNode.insertBefore(e,this._$AB)}T(e){this._$AH!==e&&(this._$AR(),this._$AH=this.O(e))}_(e){this._$AH!==g&&J(this._$AH)?this._$AA.nextSibling.data=e:this.T(T.createTextNode(e)),this._$AH=e}$(e){let{values:n,_$litType$:r}=e,i=typeof r=="number"?this._$AC(e):(r.el===void 0&&(r.el=W.createElement(et(r.h,r.h[0]),this.options)),r);if(this._$AH?._$AD===i)this._$AH.p(n);else{let o=new ee(i,this),s=o.u(this.options);o.p(n),this.T(s),this._$AH=o}}_$AC(e){let n=Ze.get(e.strings);return n===void 0&&Ze.set(e.strings,n=new W(e)),n}k(e){be(this._$AH)||(this._$AH=[],this._$AR());let n=this._$AH,r,i=0;for(let o of e)i===n.length?n.push(r=new t(this.O(K()),this.O(K()),this,this.options)):r=n[i],r._$AI(o),i++;i<n.length&&(this._$AR(r&&r._$AB.nextSibling,i),n.length=i)}_$AR(e=this._$AA.nextSibling,n){for(this._$AP?.(!1,!0,n);e!==this._$AB;){let r=Ke(e).nextSibling;Ke(e).remove(),e=r}}setConnected(e){this._$AM===void 0&&(this._$Cv=e,this._$AP?.(e))}},R=class{get tagName(){return this.element.tagName}get _$AU(){return this._$AM._$AU}constructor(e,n,r,i,o){this.type=1,this._$AH=g,this._$AN=void 0,this.element=e,this.name=n,this._$AM=i,this.options=o,r.length>2||r[0]!==""||r[1]!==""?(this._$AH=Array(r.length-1).fill(new String),this.strings=r):this._$AH=g}_$AI(e,n=this,r,i){let o=this.strings,s=!1;if(o===void 0)e=H(this,e,n,0),s=!J(e)||e!==this._$AH&&e!==A,s&&(this._$AH=e);else{let c=e,a,d;for(e=o[0],a=0;a<o.length-1;a++)d=H(this,c[r+a],n,a),d===A&&(d=this._$AH[a]),s||=!J(d)||d!==this._$AH[a],d===g?e=g:e!==g&&(e+=(d??"")+o[a+1]),this._$AH[a]=d}s&&!i&&this.j(e)}j(e){e===g?this.element.removeAttribute(this.name):this.element.setAttribute(this.name,e??"")}},te=class extends R{constructor(){super(...arguments),this.type=3}j(e){this.element[this.name]=e===g?void 0:e}},ne=class extends R{constructor(){super(...arguments),this.type=4}j(e){this.element.toggleAttribute(this.name,!!e&&e!==g)}},re=class extends R{constructor(e,n,r,i,o){super(e,n,r,i,o),this.type=5}_$AI(e,n=this){if((e=H(this,e,n,0)??g)===A)return;let r=this._$AH,i=e===g&&r!==g||e.capture!==r.capture||e.once!==r.once||e.passive!==r.passive,o=e!==g&&(r===g||i);i&&this.element.removeEventListener(this.name,this,r),o&&this.element.addEventListener(this.name,this,e),this._$AH=e}handleEvent(e){typeof this._$AH=="function"?this._$AH.call(this.options?.host??this.element,e):this._$AH.handleEvent(e)}},ie=class{constructor(e,n,r){this.element=e,this.type=6,this._$AN=void 0,this._$AM=n,this.options=r}get _$AU(){return this._$AM._$AU}_$AI(e){H(this,e)}},nt={M:me,P:x,A:ye,C:1,L:tt,R:ee,D:Ye,V:H,I:L,H:R,N:ne,U:re,B:te,F:ie},Zt=ge.litHtmlPolyfillSupport;Zt?.(W,L),(ge.litHtmlVersions??=[]).push("3.3.3");var rt=(t,e,n)=>{let r=n?.renderBefore??e,i=r._$litPart$;if(i===void 0){let o=n?.renderBefore??null;r._$litPart$=i=new L(e.insertBefore(K(),o),o,void 0,n??{})}return i._$AI(t),i};var ve=globalThis,E=class extends ${constructor(){super(...arguments),this.renderOptions={host:this},this._$Do=void 0}createRenderRoot(){let e=super.createRenderRoot();return this.renderOptions.renderBefore??=e.firstChild,e}update(e){let n=this.render();this.hasUpdated||(this.renderOptions.isConnected=this.isConnected),super.update(e),this._$Do=rt(n,this.renderRoot,this.renderOptions)}connectedCallback(){super.connectedCallback(),this._$Do?.setConnected(!0)}disconnectedCallback(){super.disconnectedCallback(),this._$Do?.setConnected(!1)}render(){return A}};E._$litElement$=!0,E.finalized=!0,ve.litElementHydrateSupport?.({LitElement:E});var Yt=ve.litElementPolyfillSupport;Yt?.({LitElement:E});(ve.litElementVersions??=[]).push("4.2.2");var it={ATTRIBUTE:1,CHILD:2,PROPERTY:3,BOOLEAN_ATTRIBUTE:4,EVENT:5,ELEMENT:6},ot=t=>(...e)=>({_$litDirective$:t,values:e}),oe=class{constructor(e){}get _$AU(){return this._$AM._$AU}_$AT(e,n,r){this._$Ct=e,this._$AM=n,this._$Ci=r}_$AS(e,n){return this.update(e,n)}update(e,n){return this.render(...n)}};var{I:Qt}=nt,st=t=>t;var at=()=>document.createComment(""),z=(t,e,n)=>{let r=t._$AA.parentNode,i=e===void 0?t._$AB:e._$AA;if(n===void 0){let o=r.insertBefore(at(),i),s=r.insertBefore(at(),i);n=new Qt(o,s,t,t.options)}else{let o=n._$AB.nextSibling,s=n._$AM,c=s!==t;if(c){let a;n._$AQ?.(t),n._$AM=t,n._$AP!==void 0&&(a=t._$AU)!==s._$AU&&n._$AP(a)}if(o!==i||c){let a=n._$AA;for(;a!==o;){let d=st(a).nextSibling;st(r).insertBefore(a,i),a=d}}}return n},_=(t,e,n=t)=>(t._$AI(e,n),t),en={},ct=(t,e=en)=>t._$AH=e,dt=t=>t._$AH,se=t=>{t._$AR(),t._$AA.remove()};var lt=(t,e,n)=>{let r=new Map;for(let i=e;i<=n;i++)r.set(t[i],i);return r},ft=ot(class extends oe{constructor(t){if(super(t),t.type!==it.CHILD)throw Error("repeat() can only be used in text expressions")}dt(t,e,n){let r;n===void 0?n=e:e!==void 0&&(r=e);let i=[],o=[],s=0;for(let c of t)i[s]=r?r(c,s):s,o[s]=n(c,s),s++;return{values:o,keys:i}}render(t,e,n){return this.dt(t,e,n).values}update(t,[e,n,r]){let i=dt(t),{values:o,keys:s}=this.dt(e,n,r);if(!Array.isArray(i))return this.ut=s,o;let c=this.ut??=[],a=[],d,f,l=0,h=i.length-1,u=0,p=o.length-1;for(;l<=h&&u<=p;)if(i[l]===null)l++;else if(i[h]===null)h--;else if(c[l]===s[u])a[u]=_(i[l],o[u]),l++,u++;else if(c[h]===s[p])a[p]=_(i[h],o[p]),h--,p--;else if(c[l]===s[p])a[p]=_(i[l],o[p]),z(t,a[p+1],i[l]),l++,p--;else if(c[h]===s[u])a[u]=_(i[h],o[u]),z(t,i[l],i[h]),h--,u++;else if(d===void 0&&(d=lt(s,u,p),f=lt(c,l,h)),d.has(c[l]))if(d.has(c[h])){let y=f.get(s[u]),S=y!==void 0?i[y]:null;if(S===null){let I=z(t,i[l]);_(I,o[u]),a[u]=I}else a[u]=_(S,o[u]),z(t,i[l],S),i[y]=null;u++}else se(i[h]),h--;else se(i[l]),l++;for(;u<=p;){let y=z(t,a[p+1]);_(y,o[u]),a[u++]=y}for(;l<=h;){let y=i[l++];y!==null&&se(y)}return this.ut=s,ct(t,a),A}});var U=class extends Error{constructor(n,r){super(r);this.status=n}status;name="ApiError"};async function ut(t){let e=new URL("api/events",t.baseUrl);for(let[s,c]of Object.entries(t.filters))typeof c=="string"&&c.length>0&&e.searchParams.set(s,c);e.searchParams.set("limit",String(t.limit)),t.cursor!==void 0&&e.searchParams.set("cursor",t.cursor);let n=await fetch(e,{headers:{authorization:`Bearer ${t.token}`,accept:"application/json"},...t.signal?{signal:t.signal}:{}}),r=await tn(n);if(!n.ok){let s=$e(r)&&typeof r.error=="string"?r.error:`HTTP ${n.status}`;throw new U(n.status,s)}if(!$e(r)||!Array.isArray(r.events))throw new U(n.status,"unexpected answer from the audit service");let i=r.events.filter(nn),o=typeof r.nextCursor=="string"?r.nextCursor:null;return{events:i,nextCursor:o}}async function tn(t){try{return await t.json()}catch{return}}function $e(t){return typeof t=="object"&&t!==null&&!Array.isArray(t)}function nn(t){return $e(t)&&typeof t.eventId=="string"&&typeof t.occurredAt=="string"&&typeof t.entityType=="string"&&typeof t.entityId=="string"&&typeof t.actorId=="string"&&Array.isArray(t.changes??[])}var rn={"&amp;":"&","&lt;":"<","&gt;":">","&quot;":'"',"&#x27;":"'"};function ht(t){return t.replace(/&(?:amp|lt|gt|quot|#x27);/g,e=>rn[e]??e)}function ae(t){return typeof t=="string"?ht(t):Array.isArray(t)?t.map(ae):typeof t=="object"&&t!==null?Object.fromEntries(Object.entries(t).map(([e,n])=>[ht(e),ae(n)])):t}function ce(t){return JSON.stringify(t,null,2)??"null"}function pt(t){let e=new Date(t);if(Number.isNaN(e.getTime()))return t;let n=r=>String(r).padStart(2,"0");return`${e.getFullYear()}-${n(e.getMonth()+1)}-${n(e.getDate())} ${n(e.getHours())}:${n(e.getMinutes())}:${n(e.getSeconds())}`}function xe(t,e){if(t.length===0)return;let n=new Date(t);if(!Number.isNaN(n.getTime())){if(e){let r=/T\d{2}:\d{2}:\d{2}/.test(t);n.setTime(n.getTime()+(r?999:59999))}return n.toISOString()}}var gt="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",mt=new Int16Array(128).fill(-1);for(let t=0;t<gt.length;t++)mt[gt.charCodeAt(t)]=t;function v(t){if(t.length%4!==0)return;let e=t.endsWith("==")?2:t.endsWith("=")?1:0,n=new Uint8Array(t.length/4*3-e),r=0;for(let i=0;i<t.length;i+=4){let o=i+4===t.length,s=[0,0,0,0];for(let d=0;d<4;d++){let f=t.charCodeAt(i+d);if(o&&d>=4-e){if(f!==61)return;continue}let l=f<128?mt[f]??-1:-1;if(l<0)return;s[d]=l}let c=(s[0]??0)<<18|(s[1]??0)<<12|(s[2]??0)<<6,a=c|(s[3]??0);if(o&&e===2&&(c&65535)!==0||o&&e===1&&(a&255)!==0)return;n[r++]=a>>>16,r<n.length&&(n[r++]=a>>>8&255),r<n.length&&(n[r++]=a&255)}return n}function yt(t){let e="";for(let n of t)e+=n.toString(16).padStart(2,"0");return e}function q(...t){let e=0;for(let i of t)e+=i.length;let n=new Uint8Array(e),r=0;for(let i of t)n.set(i,r),r+=i.length;return n}function N(t,e){if(t.length!==e.length)return!1;for(let n=0;n<t.length;n++)if(t[n]!==e[n])return!1;return!0}var on=new TextEncoder;function G(t){return on.encode(t)}var sn=/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;function Ae(t){return!sn.test(t)}function bt(t){try{return new TextDecoder("utf-8",{fatal:!0,ignoreBOM:!0}).decode(t)}catch{return}}var m=class extends Error{constructor(n,r){super(r);this.code=n}code;name="TlogError"};var an=1,wt="\u2014 ",cn=100;function $t(t){return t!==""&&Ae(t)&&!/\p{White_Space}/u.test(t)&&!t.includes("+")}async function dn(t,e,n){let r=await t.sha256(G(e),new Uint8Array([10]),n);return((r[0]??0)<<24|(r[1]??0)<<16|(r[2]??0)<<8|(r[3]??0))>>>0}function ln(t){return t.toString(16).padStart(8,"0")}function ke(t,e){let n=t.indexOf(e);return n<0?[t,""]:[t.slice(0,n),t.slice(n+e.length)]}function fn(t){return/^[0-9a-fA-F]{8}$/.test(t)?Number.parseInt(t,16):void 0}async function xt(t,e){let[n,r]=ke(e,"+"),[i,o]=ke(r,"+"),s=fn(i),c=v(o);if(s===void 0||c===void 0||!$t(n)||c.length===0)throw new m("malformed","malformed verifier id");if(s!==await dn(t,n,c))throw new m("malformed","invalid verifier hash");if(c[0]!==an)throw new m("malformed","unknown verifier algorithm");if(c.length!==33)throw new m("malformed","malformed verifier id");return{name:n,keyId:s,publicKey:c.slice(1),encoded:e}}function un(t){let e=t.lastIndexOf(`

`);if(e<0)return;let n=t.slice(e+2);if(!(n.length===0||!n.endsWith(`
`)))return{text:t.slice(0,e+1),sigs:n}}function hn(t){return((t[0]??0)<<24|(t[1]??0)<<16|(t[2]??0)<<8|(t[3]??0))>>>0}async function At(t,e,n){let r="publicKey"in n?[n]:n,i=()=>new m("malformed","malformed note"),o=typeof e=="string"?e:bt(e);if(o===void 0||!Ae(o)||/[\u0000-\u0009\u000b-\u001f]/.test(o))throw i();let s=un(o);if(s===void 0)throw i();let{text:c}=s,{sigs:a}=s,d=[],f=[],l=new Set,h=0;for(;a.length>0;){let u=a.indexOf(`
`),p=a.slice(0,u);if(a=a.slice(u+1),!p.startsWith(wt))throw i();p=p.slice(wt.length);let[y,S]=ke(p," "),I=v(S);if(I===void 0||!$t(y)||S===""||I.length<5)throw i();let D=hn(I);if(++h>cn)throw i();let Oe=r.find(j=>j.name===y&&j.keyId===D);if(Oe===void 0){l.has(p)||(l.add(p),f.push({name:y,keyId:D,base64:S}));continue}if(!d.some(j=>j.name===y&&j.keyId===D)){if(!await t.ed25519Verify(Oe.publicKey,G(c),I.subarray(4)))throw new m("bad-signature",`invalid signature for key ${y}+${ln(D)}`);d.push({name:y,keyId:D,base64:S})}}if(d.length===0)throw new m("unverified","note has no verifiable signatures");return{text:c,sigs:d,unverifiedSigs:f}}var O=32,pn=new Uint8Array([0]),gn=new Uint8Array([1]);function mn(t){let e=0;for(;2**(e+1)<t;)e++;return{k:2**e,l:e}}async function _e(t,e){return t.sha256(pn,e)}async function kt(t,e,n){return t.sha256(gn,e,n)}async function St(t,e,n,r,i,o){if(!Number.isSafeInteger(n)||!Number.isSafeInteger(i)||n<0||i<0||i>=n)throw new m("invalid-input","tlog: invalid inputs in checkRecord");let s=await Ee(t,e,0,n,i,o);if(!N(s,r))throw Se()}function Se(){return new m("proof-failed","invalid transparency proof")}async function Ee(t,e,n,r,i,o){if(!(n<=i&&i<r))throw new Error("tlog: bad math in runRecordProof");if(n+1===r){if(e.length!==0)throw Se();return o}if(e.length===0)throw Se();let s=e[e.length-1],c=e.slice(0,-1),{k:a}=mn(r-n);return i<n+a?kt(t,await Ee(t,c,n,n+a,i,o),s):kt(t,s,await Ee(t,c,n+a,r,i,o))}function yn(t){let e=d=>new m("malformed",`malformed checkpoint: ${d}`);if(!t.endsWith(`
`))throw e("text does not end in a newline");let n=t.slice(0,-1).split(`
`),[r,i,o,...s]=n;if(r===void 0||r==="")throw e("no origin line");if(i===void 0||!/^(0|[1-9][0-9]*)$/.test(i))throw e("tree size is not a decimal number");let c=Number(i);if(!Number.isSafeInteger(c))throw e("tree size too large");let a=o===void 0?void 0:v(o);if(a===void 0||a.length!==O)throw e("root hash is not 32 bytes of base64");if(s.some(d=>d===""))throw e("empty extension line");return{origin:r,size:c,rootHash:a}}async function Ie(t,e,n,r){let i=await At(t,e,n),o=yn(i.text);if(!i.sigs.some(s=>s.name===o.origin)){let s=[...new Set(i.sigs.map(c=>c.name))];throw new m("invalid-input",`checkpoint is for log ${JSON.stringify(o.origin)}, not for the key's log ${s.map(c=>JSON.stringify(c)).join(", ")}`)}if(r!==void 0&&o.origin!==r)throw new m("invalid-input",`checkpoint is for log ${JSON.stringify(o.origin)}, not ${JSON.stringify(r)}`);return{...o,note:typeof e=="string"?e:new TextDecoder().decode(e),signatures:i.sigs}}var Et=new Uint8Array([48,46,2,1,0,48,5,6,3,43,101,112,4,34,4,32]);function bn(t){let e=t.replaceAll("-","+").replaceAll("_","/"),n=atob(e+"=".repeat((4-e.length%4)%4)),r=new Uint8Array(n.length);for(let i=0;i<n.length;i++)r[i]=n.charCodeAt(i);return r}function Pe(t=globalThis.crypto?.subtle){if(t===void 0)throw new Error("WebCrypto (crypto.subtle) is not available here");let e={name:"Ed25519"};return{async sha256(...n){return new Uint8Array(await t.digest("SHA-256",q(...n)))},async ed25519PublicKey(n){let r=await t.importKey("pkcs8",q(Et,n),e,!0,["sign"]),i=await t.exportKey("jwk",r);if(i.x===void 0)throw new Error("WebCrypto returned no Ed25519 public key");return bn(i.x)},async ed25519Sign(n,r){let i=await t.importKey("pkcs8",q(Et,n),e,!1,["sign"]);return new Uint8Array(await t.sign(e,i,r))},async ed25519Verify(n,r,i){if(n.length!==32||i.length!==64)return!1;let o=await t.importKey("raw",n,e,!1,["verify"]);return t.verify(e,o,i,r)}}}function wn(t){let e=He(t);return e===k?Te(t,void 0,"$"):JSON.stringify(e)}function _t(t){return G(wn(t))}function vn(t,e){let n=[e];for(let r=t;r;r=r.parent)n.unshift(r.step);return n.map((r,i)=>i===0?String(r):typeof r=="number"?`[${r}]`:`.${r}`).join("")}function Ce(t,e,n){throw new m("malformed",`cannot canonicalize ${vn(t,e)}: ${n}`)}function Te(t,e,n){switch(typeof t){case"string":return JSON.stringify(t);case"number":return Number.isFinite(t)||Ce(e,n,`${t} is not a JSON number`),String(t);case"boolean":return t?"true":"false";case"object":break;default:Ce(e,n,`${typeof t} is not a JSON value`)}if(t===null)return"null";let r={parent:e,step:n};if(Array.isArray(t)){let a="[";for(let d=0;d<t.length;d++)d>0&&(a+=","),a+=Te(t[d],r,d);return`${a}]`}let i=Object.getPrototypeOf(t);i!==Object.prototype&&i!==null&&Ce(e,n,"not a plain JSON object");let o=t,s=Object.keys(o).sort(),c="{";for(let a=0;a<s.length;a++){let d=s[a];a>0&&(c+=","),c+=`${JSON.stringify(d)}:${Te(o[d],r,d)}`}return`${c}}`}var k=Symbol("not sortable");function $n(t){let e=t.charCodeAt(0);return e>=48&&e<=57}function He(t){switch(typeof t){case"string":case"boolean":return t;case"number":return Number.isFinite(t)?t:k;case"object":break;default:return k}if(t===null)return t;if(Array.isArray(t)){let s;for(let c=0;c<t.length;c++){let a=He(t[c]);if(a===k)return k;a!==t[c]&&(s??=t.slice(),s[c]=a)}return s??t}let e=Object.getPrototypeOf(t);if(e!==Object.prototype&&e!==null)return k;let n=t,r=Object.keys(n),i=!0;for(let s=0;s<r.length;s++){let c=r[s];if($n(c)||c==="__proto__")return k;s>0&&r[s-1]>c&&(i=!1)}i||r.sort();let o=i?void 0:{};for(let s=0;s<r.length;s++){let c=r[s],a=n[c],d=He(a);if(d===k)return k;if(o===void 0&&d!==a){o={};for(let f=0;f<s;f++)o[r[f]]=n[r[f]]}o!==void 0&&(o[c]=d)}return o??t}var Re=1,Ue=65,de=32,Le=["eventId","receivedAt","occurredAt","actionKey","action","actionDescription","entityType","entityId","actorType","actorId","actorDisplay","tenantId","source","context","changes"],Pt=/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;function w(t){return new m("malformed",t)}var xn=[...Le].sort();function An(t){let e={};for(let n of xn)Object.hasOwn(t,n)&&t[n]!==void 0&&(e[n]=t[n]);return e}async function kn(t,e,n){if(e.length!==de)throw w(`a salt is ${de} bytes`);return t.sha256(e,_t(An(n)))}function Ct(t){let e=Date.parse(t);if(Number.isNaN(e)||new Date(e).toISOString()!==t)throw w(`receivedAt ${JSON.stringify(t)} is not a UTC date-time with milliseconds`);return e}function It(t){return t<=57?t-48:t-87}function Sn(t){let{logIndex:e,receivedAtMs:n,eventId:r,commitment:i}=t;if(!Number.isSafeInteger(e)||e<0)throw w("bad logIndex");if(!Number.isSafeInteger(n))throw w("bad receivedAt");if(!Pt.test(r))throw w(`eventId ${JSON.stringify(r)} is not a UUID`);if(i.length!==O)throw w("a commitment is 32 bytes");let o=new Uint8Array(Ue),s=new DataView(o.buffer);o[0]=Re,s.setBigUint64(1,BigInt(e)),s.setBigInt64(9,BigInt(n));for(let c=0,a=17;c<r.length;c+=2)r.charCodeAt(c)===45&&c++,o[a++]=It(r.charCodeAt(c))<<4|It(r.charCodeAt(c+1));return o.set(i,33),o}function Ne(t){if(t.length!==Ue||t[0]!==Re)throw w(`not a version-${Re} leaf of ${Ue} bytes`);let e=new DataView(t.buffer,t.byteOffset,t.byteLength),n=e.getBigUint64(1),r=e.getBigInt64(9);if(n>BigInt(Number.MAX_SAFE_INTEGER))throw w("logIndex out of range");let i=yt(t.subarray(17,33));return{logIndex:Number(n),receivedAtMs:Number(r),eventId:`${i.slice(0,8)}-${i.slice(8,12)}-${i.slice(12,16)}-${i.slice(16,20)}-${i.slice(20)}`,commitment:t.slice(33,65)}}async function Tt(t,e){let{eventId:n,receivedAt:r,logIndex:i,salt:o}=e;if(typeof n!="string"||!Pt.test(n))throw w("no valid eventId");if(typeof r!="string")throw w("no receivedAt");if(typeof i!="number"||!Number.isSafeInteger(i)||i<0)throw w("no logIndex");let s=typeof o=="string"?v(o):void 0;if(s===void 0||s.length!==de)throw w(`no salt of ${de} bytes in base64`);let c=await kn(t,s,e),a=Sn({logIndex:i,receivedAtMs:Ct(r),eventId:n,commitment:c});return{eventId:n,logIndex:i,leaf:a}}function Ht(t,e){if(N(t,e))return;let n;try{n=Ne(e)}catch{return"the service's leaf is not a valid leaf"}let r=Ne(t),i=[];return r.logIndex!==n.logIndex&&i.push(`logIndex ${n.logIndex}`),r.eventId!==n.eventId&&i.push(`eventId ${n.eventId}`),r.receivedAtMs!==n.receivedAtMs&&i.push(`receivedAt ${new Date(n.receivedAtMs).toISOString()}`),N(r.commitment,n.commitment)||i.push("a commitment to other content"),`the service's leaf has ${i.join(", ")}`}function Rt(t){return t instanceof Error?t.message:String(t)}function En(t){return t.map(e=>{let n=v(e);if(n===void 0||n.length!==O)throw new m("malformed","a proof hash is not 32 bytes of base64");return n})}async function Ut(t,e,n,r){let i,o;try{({leaf:i,logIndex:o}=await Tt(t,e))}catch(f){return`cannot recompute its leaf: ${Rt(f)}`}let s=Number(n.logIndex),c=Number(n.treeSize);if(s!==o)return`the service places it at logIndex ${n.logIndex}, the event says ${o}`;if(c!==r.size)return`the proof is for tree size ${n.treeSize}, not the checkpoint's ${r.size}`;let a=v(n.leaf);if(a===void 0)return"the service's leaf is not base64";let d=Ht(i,a);if(d!==void 0)return`its content or metadata changed since it was logged: ${d}`;try{await St(t,En(n.hashes),r.size,r.rootHash,o,await _e(t,i))}catch(f){return f instanceof m&&f.code==="proof-failed"?"its inclusion proof does not lead to the checkpoint's root (the event or the tree was changed)":`its inclusion proof is unusable: ${Rt(f)}`}}async function Nt(t,e){let n=e.split(/\s+/).filter(o=>o!=="");if(n.length===0)throw new m("malformed","no verifier key given");let r=await Promise.all(n.map(o=>xt(t,o))),i=new Set(r.map(o=>o.name));if(i.size>1)throw new m("malformed",`the verifier keys name different logs: ${[...i].join(", ")}`);return r}var ti=new Set([...Le,"logIndex","salt"]);function Ot(t){let e,n,r=async s=>fetch(new URL(s,t.baseUrl),{headers:{authorization:`Bearer ${await t.token()}`}}),i=async s=>{let c=await r(s),a=await c.text();if(!c.ok)throw new Error(zt(a,c.status));return a},o=async()=>{e??=Pe();let s=t.verifierKey.trim()||(await i("api/log/key")).trim();return Ie(e,await i("api/log/checkpoint"),await Nt(e,s))};return{async verify(s){let c;try{if(n??=o(),c=await n,typeof s.logIndex=="number"&&s.logIndex>=c.size&&(n=o(),c=await n,s.logIndex>=c.size))return{state:"pending",reason:"not yet in a signed checkpoint"}}catch(a){return n=void 0,{state:"failed",reason:`checkpoint: ${Lt(a)}`}}try{let a=String(s.eventId),d=await r(`api/log/proof/inclusion?eventId=${encodeURIComponent(a)}&treeSize=${c.size}`),f=await d.text();if(!d.ok)return{state:"failed",reason:zt(f,d.status)};let l=await Ut(e??Pe(),s,JSON.parse(f),c);return l===void 0?{state:"verified",treeSize:c.size}:{state:"failed",reason:l}}catch(a){return{state:"failed",reason:Lt(a)}}}}}function Lt(t){return t instanceof Error?t.message:String(t)}function zt(t,e){try{let n=JSON.parse(t);if(typeof n.error=="string")return n.error}catch{}return`HTTP ${e}`}var M=class extends Error{name="TokenProviderError"},_n=15e3,In=1e3;function Pn(t){let e=t.split(".")[1];if(e===void 0)return{};try{let n=e.replace(/-/g,"+").replace(/_/g,"/"),r=JSON.parse(atob(n.padEnd(Math.ceil(n.length/4)*4,"=")));if(typeof r!="object"||r===null)return{};let{iat:i,exp:o}=r;return{...typeof i=="number"?{issuedAt:i}:{},...typeof o=="number"?{expiresAt:o}:{}}}catch{return{}}}function Mt(t){let e=()=>Date.now(),n,r,i,o,s,c=()=>{if(s!==void 0&&clearTimeout(s),s=void 0,i===void 0)return;let f=Math.max(In,i-e());s=setTimeout(()=>{d().catch(()=>{})},f)},a=(f,l)=>{if(f===n){s!==void 0&&clearTimeout(s),s=void 0;return}n=f;let{issuedAt:h,expiresAt:u}=Pn(f);if(u===void 0)r=void 0,i=void 0;else{let p=h!==void 0&&u>h?(u-h)*1e3:u*1e3-l,y=Math.min(_n,Math.max(0,p)/2);r=l+p,i=r-y}c()},d=()=>(o??=(async()=>{let f;try{f=await t()}catch(l){throw new M(l instanceof Error?l.message:String(l))}if(typeof f!="string"||f.trim().length===0)throw new M("the token provider returned no token");return a(f.trim(),e()),f.trim()})().finally(()=>{o=void 0}),o);return{async get(){if(o)return o;if(n!==void 0&&(i===void 0||e()<i))return n;let f=n;try{return await d()}catch(l){let h=r===void 0||e()<r;if(f!==void 0&&h)return f;throw l}},refresh:d,stop(){s!==void 0&&clearTimeout(s),s=void 0}}}var Dt=50,Cn=200,Tn=["q","actorId","entityType","entityId","action","tenantId"],Hn=1e3,Rn=3e4,ze=class extends E{static properties={baseUrl:{attribute:"base-url"},pageSize:{attribute:"page-size",type:Number},tokenProvider:{attribute:!1},events:{state:!0},nextCursor:{state:!0},loading:{state:!0},error:{state:!0},open:{state:!0},verifyProofs:{attribute:"verify",type:Boolean},verifierKey:{attribute:"verifier-key"},verification:{state:!0}};verifier;filters={};tokens;generation=0;inFlight;observer;observed;constructor(){super(),this.baseUrl="",this.pageSize=Dt,this.tokenProvider=void 0,this.events=[],this.nextCursor=null,this.loading=!1,this.error=void 0,this.open=new Set,this.verifyProofs=!1,this.verifierKey="",this.verification=new Map}connectedCallback(){super.connectedCallback(),this.observer=new IntersectionObserver(e=>{e.some(n=>n.isIntersecting)&&this.loadMore()}),this.tokens&&this.hasUpdated&&this.events.length===0&&this.reload(),this.requestUpdate()}disconnectedCallback(){super.disconnectedCallback(),this.observer?.disconnect(),this.observer=void 0,this.observed=void 0,this.tokens?.stop(),this.inFlight?.abort(),this.loading=!1}willUpdate(e){e.has("tokenProvider")?(this.tokens?.stop(),this.tokens=this.tokenProvider?Mt(this.tokenProvider):void 0,this.reload()):(e.has("baseUrl")||e.has("pageSize"))&&this.hasUpdated&&this.reload()}updated(){let e=this.renderRoot.querySelector(".more")??void 0;this.observer&&(this.observed&&this.observer.unobserve(this.observed),this.observed=e,e&&!this.loading&&this.observer.observe(e))}reload(){this.generation++,this.inFlight?.abort(),this.inFlight=void 0,this.events=[],this.nextCursor=null,this.open=new Set,this.verification=new Map,this.verifier=void 0,this.error=void 0,this.loading=!1,this.tokens&&this.fetchPage(void 0)}loadMore=()=>{this.loading||this.error!==void 0||this.nextCursor===null||this.fetchPage(this.nextCursor)};async fetchPage(e){let n=this.tokens;if(!n)return;let r=this.generation,i=new AbortController;this.inFlight=i,this.loading=!0,this.error=void 0;try{let o=d=>ut({baseUrl:this.serviceUrl(),token:d,filters:this.filters,limit:this.limit(),...e===void 0?{}:{cursor:e},signal:i.signal}),s;try{s=await o(await n.get())}catch(d){if(!(d instanceof U&&d.status===401)||d.message!=="Token expired")throw d;s=await o(await n.refresh())}if(r!==this.generation)return;let c=new Set(this.events.map(d=>d.eventId)),a=s.events.filter(d=>!c.has(d.eventId));this.events=[...this.events,...a.map(Un)],this.verifyProofs&&this.verifyEvents(a,r,n),this.nextCursor=s.nextCursor}catch(o){if(r!==this.generation||i.signal.aborted)return;this.error=Nn(o)}finally{r===this.generation&&(this.loading=!1,this.inFlight=void 0)}}verifyEvents(e,n,r,i=0){this.verifier??=Ot({baseUrl:this.serviceUrl(),token:()=>r.get(),verifierKey:this.verifierKey??""});let o=this.verifier;(async()=>{let s=[];for(let c of e){let a=await o.verify(c);if(n!==this.generation)return;this.verification=new Map(this.verification).set(c.eventId,a),a.state==="pending"&&s.push(c)}s.length!==0&&setTimeout(()=>{n!==this.generation||!this.isConnected||this.verifyEvents(s,n,r,i+1)},Math.min(Hn*2**i,Rn))})()}renderProof(e){if(!this.verifyProofs)return g;let n=this.verification.get(e);return n===void 0?b`<span class="proof checking">checking…</span>`:n.state==="verified"?b`<span
        class="proof verified"
        title=${`In the signed log (checkpoint of ${n.treeSize} events), unchanged: checked in this browser`}
        >✓ verified</span
      >`:b`<span class="proof ${n.state}" title=${n.reason}
      >${n.state==="pending"?"\u2026 pending":"\u2717 not verified"}</span
    >`}serviceUrl(){let e=this.baseUrl.trim()||window.location.origin;return e.endsWith("/")?e:`${e}/`}limit(){let e=Math.trunc(Number(this.pageSize));return Number.isFinite(e)&&e>=1?Math.min(e,Cn):Dt}onSubmit=e=>{e.preventDefault();let n=e.currentTarget,r=new FormData(n),i={};for(let c of Tn){let a=String(r.get(c)??"").trim();a.length>0&&(i[c]=a)}let o=xe(String(r.get("from")??""),!1),s=xe(String(r.get("to")??""),!0);o&&(i.from=o),s&&(i.to=s),this.filters=i,this.reload()};onReset=()=>{this.filters={},this.reload()};toggle(e){let n=new Set(this.open);n.delete(e)||n.add(e),this.open=n}onRowKey=e=>{let n=[...this.renderRoot.querySelectorAll("button.summary")],r=n.indexOf(e.currentTarget),i=e.key==="ArrowDown"?n[r+1]:e.key==="ArrowUp"?n[r-1]:e.key==="Home"?n[0]:e.key==="End"?n.at(-1):void 0;i&&(e.preventDefault(),i.focus())};retry=()=>{this.events.length===0?this.reload():(this.error=void 0,this.loadMore())};render(){return b`
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
          ${ft(this.events,e=>e.eventId,(e,n)=>this.renderRow(e,n))}
        </ul>
        ${this.nextCursor!==null&&this.error===void 0?b`<button type="button" class="more" @click=${this.loadMore}>
                ${this.loading?"Loading\u2026":"Load more"}
              </button>`:g}
      </div>
    `}statusText(){if(!this.tokens)return"Waiting for a frontend token.";let e=this.events.length;if(e===0)return this.loading?"Loading events\u2026":this.error===void 0?"No events match these filters.":"";let n=`${e} ${e===1?"event":"events"}`;return this.loading?`Showing ${n}; loading more\u2026`:this.nextCursor===null?`Showing all ${n}, newest first.`:`Showing ${n}, newest first; scroll for more.`}renderRow(e,n){let r=this.open.has(e.eventId),i=`details-${n}`;return b`<li class="row">
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
          ><time datetime=${e.occurredAt}>${pt(e.occurredAt)}</time>
          ${this.renderProof(e.eventId)}</span
        >
        <span class="action">${jt(e)}</span>
        <span class="actor"
          >${e.actorDisplay??e.actorId}
          ${e.actorDisplay===void 0?g:b`<span class="sub">${e.actorId}</span>`}</span
        >
        <span class="entity">${e.entityType} <span class="sub">${e.entityId}</span></span>
        <span class="tenant">${e.tenantId??""}</span>
      </button>
      ${r?this.renderDetails(e,i):g}
    </li>`}renderDetails(e,n){let r=(i,o)=>o===void 0?g:b`<dt>${i}</dt><dd>${o}</dd>`;return b`<section class="details" id=${n} aria-label="Event details">
      <dl>
        ${r("Event id",e.eventId)}
        ${r("Occurred",e.occurredAt)}
        ${r("Received",e.receivedAt)}
        ${r("Action",jt(e))}
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
                    <td><del><pre>${ce(i.before)}</pre></del></td>
                    <td><ins><pre>${ce(i.after)}</pre></ins></td>
                  </tr>`)}
              </tbody>
            </table>`}
      <h3>Context</h3>
      ${e.context===void 0||Object.keys(e.context).length===0?b`<p class="none">No context.</p>`:b`<pre class="json">${ce(e.context)}</pre>`}
    </section>`}static styles=fe`
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
  `};function jt(t){return t.actionKey??t.action??""}function Un(t){return ae(t)}function Nn(t){return t instanceof U?t.status===401?`Not authorized: ${t.message}. The page needs a new frontend token.`:t.status===400?`The service refused these filters: ${t.message}`:`The audit service answered ${t.status}: ${t.message}`:t instanceof M?`Could not get a token: ${t.message}`:`Could not reach the audit service: ${t instanceof Error?t.message:String(t)}`}customElements.get("audit-log-viewer")||customElements.define("audit-log-viewer",ze);export{ze as AuditLogViewer};
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
